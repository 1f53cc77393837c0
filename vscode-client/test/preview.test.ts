import assert from 'node:assert/strict';
import { test } from 'node:test';
import { previewMarkdown } from '../src/preview';

test('the preview document lists instructions, messages, tools and providers', () => {
  const md = previewMarkdown('writer', 'Draft it', {
    instructions: 'You are Writer.\n```code```',
    messages: [{ role: 'user', source: 'TodoListContextProvider', text: 'todo' }],
    tools: [{ name: 'read_file', description: 'Reads a file.\nMore.' }, 'current_datetime'],
    providers: [{ type: 'personal', contributed: ['instructions'] }],
  });
  assert.match(md, /^# Prompt preview: `writer`/);
  assert.match(md, /## Input\n\n```\nDraft it\n```/);
  assert.match(md, /````\nYou are Writer\.\n```code```\n````/); // fences longer than the content's
  assert.match(md, /\*\*user · TodoListContextProvider\*\*\n\n```\ntodo\n```/);
  assert.match(md, /- `read_file` — Reads a file\.\n- `current_datetime`/);
  assert.match(md, /- `personal` — contributed: \["instructions"\]/);
  assert.match(previewMarkdown('x', undefined, null), /## Tools \(0\)/);
});

test('the preview document says, under the tools, what an agent called as a tool leaves off', () => {
  const note = '`echo` is called as a tool here: its memory is off (memory works for the agent a run asks for)';
  const md = previewMarkdown('lead', undefined, { tools: [{ name: 'echo', description: 'Repeats.' }], notes: [note] });
  assert.match(md, /- `echo` — Repeats\.\n\n> note: `echo` is called as a tool here: its memory is off \(memory works for the agent a run asks for\)\n/);
});
