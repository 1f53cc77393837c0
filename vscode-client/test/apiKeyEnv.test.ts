import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { distinctEnvs, modelKeys, secretKey } from '../src/apiKeyEnv';

const examples = join(__dirname, '..', '..', '..', 'examples');

test('every [models.*] api_key_env of the example workspace', () => {
  const keys = modelKeys(readFileSync(join(examples, 'oscova.toml'), 'utf8'));
  assert.deepEqual(keys, [{ model: 'default', env: 'OPENAI_API_KEY' }]);  // `local` (Ollama) needs no key
});

test('tables, quoted names, comments, dotted keys and inline tables', () => {
  const toml = `
# api_key_env = "NOT_THIS"
[host]
api_key_env = "NOT_A_MODEL"
[models.default]   # the default
model = "gpt-4.1-mini"
api_key_env = "OPENAI_API_KEY"  # keys come from the environment
[models."azure.eu"]
api_key_env = 'AZURE_KEY'
[models]
ollama = { model = "llama", api_key_env = "OLLAMA_KEY" }
models.extra.api_key_env = "IGNORED_NOT_ROOT"
[tools.x]
api_key_env = "NOT_A_MODEL_EITHER"
`;
  assert.deepEqual(modelKeys(toml), [
    { model: 'default', env: 'OPENAI_API_KEY' },
    { model: 'azure.eu', env: 'AZURE_KEY' },
    { model: 'ollama', env: 'OLLAMA_KEY' },
  ]);
  assert.deepEqual(modelKeys('models.a.api_key_env = "A_KEY"\n'), [{ model: 'a', env: 'A_KEY' }]);
});

test('pyproject.toml: only [tool.oscova.models.*]', () => {
  const toml = '[tool.other.models.x]\napi_key_env = "NO"\n[tool.oscova.models.default]\napi_key_env = "YES_KEY"\n';
  assert.deepEqual(modelKeys(toml, '/ws/pyproject.toml'), [{ model: 'default', env: 'YES_KEY' }]);
  assert.deepEqual(modelKeys(toml, '/ws/oscova.toml'), []);
});

test('invalid variable names and broken files give nothing, never an exception', () => {
  assert.deepEqual(modelKeys('[models.a]\napi_key_env = "has space"\n[models.b]\napi_key_env = 42\n'), []);
  assert.deepEqual(modelKeys('[[[\n= =\n"unterminated\n\u0000'), []);
});

test('distinct names and the secret key', () => {
  assert.deepEqual(distinctEnvs([{ model: 'a', env: 'K' }, { model: 'b', env: 'K' }, { model: 'c', env: 'L' }]), ['K', 'L']);
  assert.equal(secretKey('OPENAI_API_KEY'), 'oscova.apiKey.OPENAI_API_KEY');
});
