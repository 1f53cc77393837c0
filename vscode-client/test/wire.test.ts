import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type * as wire from '../src/wire';

const root = join(__dirname, '..', '..');

test('src/wire.ts is what the server\'s models generate (`oscova-lsp schema --wire`)', async (t) => {
  const { findOscovaLsp, generateWire, wirePath } = await import(join(root, 'scripts', 'generate-schema.mjs'));
  const exe = findOscovaLsp();
  if (!exe) {
    if (process.env.CI) assert.fail('oscova-lsp not found: set OSCOVA_LSP or install the server into ../.venv');
    t.skip('oscova-lsp not installed');
    return;
  }
  assert.equal(readFileSync(wirePath, 'utf8'), await generateWire(exe), 'stale src/wire.ts: run `npm run schema`');
});

test('every event kind of the server is one of the union, told apart by `kind`', () => {
  const kinds: Record<wire.RunEvent['kind'], true> = {
    started: true, message: true, delta: true, reasoning: true, modelCall: true, toolCall: true, toolResult: true,
    notice: true, warning: true, completed: true, failed: true, cancelled: true,
  };
  assert.equal(Object.keys(kinds).length, 12);
});
