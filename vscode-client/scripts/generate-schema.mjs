// Writes schemas/agent-definition.schema.json from `oscova-lsp schema` and schemas/evaluation.schema.json
// from `oscova-lsp schema --eval` (the server's own models), so the YAML extension validates definitions and
// evaluations with exactly what the server checks. The file is committed:
// packaging needs no Python. `--check` exits 1 when the committed file is stale.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const schemaPath = join(here, '..', 'schemas', 'agent-definition.schema.json');
export const evalSchemaPath = join(here, '..', 'schemas', 'evaluation.schema.json');

/** The `oscova-lsp` to ask: $OSCOVA_LSP, the repository's venv, else PATH. */
export function findOscovaLsp() {
  if (process.env.OSCOVA_LSP) return process.env.OSCOVA_LSP;
  const venv = join(here, '..', '..', '.venv', 'bin', 'oscova-lsp');
  if (existsSync(venv)) return venv;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'oscova-lsp'))) return join(dir, 'oscova-lsp');
  }
  return undefined;
}

export function generate(executable, ...options) {
  const raw = execFileSync(executable, ['schema', ...options], { encoding: 'utf8' });
  return JSON.stringify(JSON.parse(raw), null, 2) + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const exe = findOscovaLsp();
  if (!exe) {
    console.error('oscova-lsp not found (set OSCOVA_LSP, or install the server into ../.venv)');
    process.exit(2);
  }
  for (const [path, options] of [[schemaPath, []], [evalSchemaPath, ['--eval']]]) {
    const text = generate(exe, ...options);
    if (process.argv.includes('--check')) {
      const current = existsSync(path) ? readFileSync(path, 'utf8') : '';
      if (current !== text) {
        console.error(`${path} is stale: run \`npm run schema\``);
        process.exit(1);
      }
      console.log(`${path} up to date`);
    } else {
      writeFileSync(path, text);
      console.log(`wrote ${path}`);
    }
  }
}
