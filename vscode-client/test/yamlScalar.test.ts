import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { exampleInputFromYaml } from '../src/yamlScalar';

test('example_input of the example definitions', () => {
  const text = readFileSync(join(__dirname, '..', '..', '..', 'examples', 'agents', 'summarizer.agent.yaml'), 'utf8');
  assert.equal(exampleInputFromYaml(text), 'Summarize the incident timeline.');
});

test('plain, quoted and block scalars; nested keys are not top-level', () => {
  assert.equal(exampleInputFromYaml('id: a\nexample_input: hi there # comment\n'), 'hi there');
  assert.equal(exampleInputFromYaml('example_input: "a \\"b\\"\\nc"\n'), 'a "b"\nc');
  assert.equal(exampleInputFromYaml("example_input: 'it''s'\n"), "it's");
  assert.equal(exampleInputFromYaml('example_input: |\n  line 1\n  line 2\nid: x\n'), 'line 1\nline 2');
  assert.equal(exampleInputFromYaml('example_input: >-\n  one\n  two\n'), 'one two');
  assert.equal(exampleInputFromYaml('chat_options:\n  example_input: nested\n'), undefined);
  assert.equal(exampleInputFromYaml('id: a\n'), undefined);
});
