// Writes schemas/agent-definition.schema.json from `oscova-lsp schema` (the server's own model), so the
// YAML extension validates definitions with exactly what the server checks. The file is committed:
// packaging needs no Python. `--check` exits 1 when the committed file is stale.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const schemaPath = join(here, '..', 'schemas', 'agent-definition.schema.json');

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

export function generate(executable) {
  const raw = execFileSync(executable, ['schema'], { encoding: 'utf8' });
  return JSON.stringify(JSON.parse(raw), null, 2) + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const exe = findOscovaLsp();
  if (!exe) {
    console.error('oscova-lsp not found (set OSCOVA_LSP, or install the server into ../.venv)');
    process.exit(2);
  }
  const text = generate(exe);
  if (process.argv.includes('--check')) {
    const current = existsSync(schemaPath) ? readFileSync(schemaPath, 'utf8') : '';
    if (current !== text) {
      console.error(`${schemaPath} is stale: run \`npm run schema\``);
      process.exit(1);
    }
    console.log('schema up to date');
  } else {
    writeFileSync(schemaPath, text);
    console.log(`wrote ${schemaPath}`);
  }
}
