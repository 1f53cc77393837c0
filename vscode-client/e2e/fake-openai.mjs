// A tiny OpenAI-compatible chat-completions endpoint for the end-to-end test (streaming, but for the judge).
// - The request carries no tool result yet: the reply is a call of `current_datetime`.
// - It carries one: the answer streams in small chunks.
// - The last user message contains "slow": one chunk, then the stream stays open until the client leaves.
// - The last user message is the evaluation judge's prompt: the verdict JSON (`judge(answer)`, "pass" when
//   the graded answer holds "late"), as one JSON completion (the judge does not stream).
// - A wrong `Authorization` header: 401, as OpenAI answers.
import http from 'node:http';

const JUDGE_OPENING = 'You grade one answer of an AI agent';
const defaultJudge = (answer) => (answer.includes('late')
  ? { verdict: 'pass', reason: 'It reports the time the clock tool gave.' }
  : { verdict: 'fail', reason: 'It does not say what time it is.' });

export function startFakeOpenAI({ apiKey, answer = 'The clock tool says it is late. Done.', chunkDelayMs = 40, judge = defaultJudge } = {}) {
  const state = { requests: [], closedEarly: 0, judged: [] };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      let json = {};
      try { json = JSON.parse(body || '{}'); } catch { /* empty */ }
      state.requests.push({ url: req.url, auth: req.headers.authorization === `Bearer ${apiKey}`, body: json });
      if (!req.url.endsWith('/chat/completions')) { res.writeHead(404).end(); return; }
      if (apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
        return;
      }
      const messages = json.messages ?? [];
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      const userText = typeof lastUser?.content === 'string' ? lastUser.content : JSON.stringify(lastUser?.content ?? '');
      const hasToolResult = messages.some((m) => m.role === 'tool');
      const id = `chatcmpl-${state.requests.length}`;
      const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: json.model ?? 'fake' };
      const send = (choice, extra = {}) => res.write(`data: ${JSON.stringify({ ...base, choices: choice ? [choice] : [], ...extra })}\n\n`);
      let closed = false;
      res.on('close', () => { if (!res.writableEnded) { closed = true; state.closedEarly++; } });
      if (userText.startsWith(JUDGE_OPENING)) {
        const graded = userText.split("Agent's answer:\n")[1] ?? '';
        const verdict = JSON.stringify(judge(graded));
        state.judged.push({ answer: graded, verdict });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id, object: 'chat.completion', created: base.created, model: base.model,
          usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 },
          choices: [{ index: 0, message: { role: 'assistant', content: verdict }, finish_reason: 'stop' }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      if (userText.includes('slow')) {
        send({ index: 0, delta: { role: 'assistant', content: 'Thinking slowly' }, finish_reason: null });
        return; // left open: only a cancel ends it
      }
      if (!hasToolResult && (json.tools ?? []).some((t) => t.function?.name === 'current_datetime')) {
        send({ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'current_datetime', arguments: '' } }] }, finish_reason: null });
        send({ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, finish_reason: null });
        send({ index: 0, delta: {}, finish_reason: 'tool_calls' });
        res.end('data: [DONE]\n\n');
        return;
      }
      const words = answer.match(/.{1,6}/gs) ?? [];
      let i = 0;
      const tick = () => {
        if (closed) return;
        if (i < words.length) {
          send({ index: 0, delta: i === 0 ? { role: 'assistant', content: words[i] } : { content: words[i] }, finish_reason: null });
          i++;
          setTimeout(tick, chunkDelayMs);
        } else {
          send({ index: 0, delta: {}, finish_reason: 'stop' });
          send(null, { usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });
          res.end('data: [DONE]\n\n');
        }
      };
      tick();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    resolve({ port, baseUrl: `http://127.0.0.1:${port}/v1`, state, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }) });
  }));
}
