// End-to-end test in real VS Code: code-server 4.139.1 + headless Chromium, driven by playwright-core.
// Called by e2e/run.sh (which installs everything and builds the .vsix): node e2e/e2e.mjs path/to.vsix
//
// 1. Diagnostics: a copy of examples/broken; a definition and a template opened from the explorer;
//    squiggles and Problems rows with concrete OSC codes and messages.
// 2. Runs (when the server advertises `oscova.runAgent`; in CI it must): a scratch workspace whose
//    model is a local fake OpenAI endpoint; the key set with "Oscova: Set API Key"; "Oscova: Run Agent"
//    shows the streamed answer and a tool call in the Run view; a second run is cancelled from the view.
// 3. Agent tests (when the server advertises `oscova.listTests` / `oscova.runTest`; in CI it must): two
//    runs recorded with `oscova-lsp run` and saved as cases with `oscova-lsp test --save`, a third saved
//    from the Run view (which also opens "Compare with previous run"); the Test Explorer lists them, runs
//    all (all pass), and after an edit of the clock agent's instructions runs one case alone, which fails
//    with the diff of the recorded and the current instructions in Test Results.
// 3b. The debugger (also alone: OSCOVA_E2E_ONLY=debug): the `model` function breakpoint added in the
//    Breakpoints view, the "Debug agent" lens, the stop before model call 1, the instructions read and edited in the
//    Variables view, the endpoint receiving the edit, the run completing (e2e/debugSession.mjs).
// 3c. Evaluations (also alone: OSCOVA_E2E_ONLY=evals): an evaluation file written into the run workspace is
//    listed in the Test Explorer and run from there; one case passes (the judge scripted too), one fails on a
//    drifted answer; the results view shows the matrix cells, and the failure opens the expected/actual diff.
// 4. Restricted Mode: a workspace whose `yaml.py`, `uuid.py`, `pydantic.py`, … and custom tool and
//    provider modules write marker files when imported, opened untrusted, with the server started
//    through each start path: the console script, `python -m oscova_lsp` and `python -P -m oscova_lsp`
//    (what the Python-extension path runs), each in the workspace folder, its 420 templates parsed by
//    worker processes. Diagnostics arrive, Preview Prompt shows the built-in rendering and what it did
//    not load, Run Agent is refused, and no marker appears.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { debugSession } from './debugSession.mjs';
import { startFakeOpenAI } from './fake-openai.mjs';
import {
  CHROMIUM_ARGS, dumpLogs, explorerOpen, freePort, log, need, openWorkbench, oscovaLog, pickItem, problems, QUIET_SETTINGS, quickInputVisible,
  runCommand, runFrame, waitFor,
} from './workbench.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const CI = ['true', '1'].includes(String(process.env.CI).toLowerCase());
const vsix = process.argv[2];
const NODE24 = process.env.OSCOVA_E2E_NODE;
const CODE_SERVER = process.env.OSCOVA_E2E_CODE_SERVER;
const OSCOVA_LSP = process.env.OSCOVA_LSP;
const CHROMIUM = process.env.OSCOVA_E2E_CHROMIUM ?? '/usr/bin/chromium';
const API_KEY = 'sk-e2e-0123456789';
const API_KEY_ENV = 'OSCOVA_E2E_API_KEY';
const screenshots = join(here, 'screenshots');
const cleanups = [];

/** The commands the server advertises: an `initialize` handshake over stdio. */
async function advertisedCommands(executable) {
  const child = spawn(executable, [], { stdio: ['pipe', 'pipe', 'ignore'] });
  try {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: process.pid, rootUri: null, capabilities: {} } });
    child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    let buffer = Buffer.alloc(0);
    const result = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no initialize answer in 10 s')), 10_000);
      child.stdout.on('data', (chunk) => {
        buffer = Buffer.concat([buffer, chunk]);
        const headerEnd = buffer.indexOf('\r\n\r\n');
        if (headerEnd < 0) return;
        const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString())?.[1]);
        if (buffer.length < headerEnd + 4 + length) return;
        clearTimeout(timer);
        resolve(JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString()));
      });
      child.on('exit', () => reject(new Error('the server exited before answering initialize')));
    });
    return result.result?.capabilities?.executeCommandProvider?.commands ?? [];
  } finally {
    child.kill();
  }
}

function writeRunWorkspace(dir, baseUrl) {
  mkdirSync(join(dir, 'agents'), { recursive: true });
  writeFileSync(join(dir, 'oscova.toml'), `[host]
user_id = "e2e"

[models.default]
model = "fake-model"
base_url = "${baseUrl}"
api_key_env = "${API_KEY_ENV}"
`);
  writeFileSync(join(dir, 'agents', 'clock.agent.yaml'), `id: clock
name: Clock
description: Tells the time with the current_datetime tool.
instructions: You are {{ agent_name }}. Answer questions about time with the current_datetime tool.
tools:
  - current_datetime
example_input: What time is it? Use the tool.
`);
  // The user's private notes for clock are a link to another user's: refused, so a run says so (a `notice`).
  mkdirSync(join(dir, '.oscova', 'notes', 'other'), { recursive: true });
  mkdirSync(join(dir, '.oscova', 'notes', 'e2e'), { recursive: true });
  writeFileSync(join(dir, '.oscova', 'notes', 'other', 'clock.md'), `${OTHERS_NOTES}\n`);
  symlinkSync(join(dir, '.oscova', 'notes', 'other', 'clock.md'), join(dir, '.oscova', 'notes', 'e2e', 'clock.md'));
}
const OTHERS_NOTES = 'other-users-notes-5e1f: not for e2e';

/** Records a run with the CLI (the model: the fake endpoint, served by this process: not spawnSync) and
 * saves it as a case under .oscova/tests/. */
async function saveCase(dir, agent, input, name) {
  const env = { ...process.env, [API_KEY_ENV]: API_KEY };
  const cli = (...args) => new Promise((resolve, reject) => {
    execFile(OSCOVA_LSP, args, { cwd: dir, env, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`oscova-lsp ${args.join(' ')} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
  const runId = JSON.parse((await cli('run', agent, '--input', input, '--json')).split('\n')[0]).runId;
  await cli('test', '--save', runId, '--name', name);
}

// An evaluation of the clock agent: one case passes (its judge is scripted to pass "late"), one drifts from
// the answer it expects (`equals`), so its failure opens as a diff.
const CLOCK_EVAL = `agent: clock
models: [default]
cases:
  - name: tells-the-time
    input: What time is it? Use the tool.
    expect:
      - status: completed
      - tools: { mode: exact, calls: [current_datetime] }
      - judge: Says what time the clock tool gave.
  - name: exact-answer
    input: What time is it? Use the tool.
    expect:
      - status: completed
      - equals: The clock tool says it is early. Done.
`;

const GREETER = `id: greeter
name: Greeter
instructions: You greet people warmly.
`;

// Restricted Mode: files that write a marker (outside the workspace) when imported. The shadows are
// modules the server imports, some lazily; `stamp_tool` and `stamp_provider` are the workspace's own code.
const SHADOWED = ['yaml', 'uuid', 'pydantic', 'hashlib', 'lsprotocol', 'json', 'jinja2', 'multiprocessing', 'concurrent'];
const BULK_TEMPLATES = 420; // above the server's threshold for parsing templates in worker processes

function writeUntrustedWorkspace(dir, baseUrl, markers) {
  writeRunWorkspace(dir, baseUrl);
  mkdirSync(markers, { recursive: true });
  const marker = (name) => `open(${JSON.stringify(join(markers, name))}, 'w').close()\n`;
  for (const name of SHADOWED) writeFileSync(join(dir, `${name}.py`), marker(name));
  writeFileSync(join(dir, 'stamp_tool.py'), `${marker('stamp_tool')}\ndef stamp(text: str) -> str:\n    """Stamps."""\n    return text\n`);
  writeFileSync(join(dir, 'stamp_provider.py'), `${marker('stamp_provider')}from oscova_runtime import AIContext, AIContextProvider\n\n
class Stamper(AIContextProvider):\n    async def provide_ai_context(self, context):\n        return AIContext(instructions="Stamped.")\n`);
  writeFileSync(join(dir, 'oscova.toml'), `${readFileSync(join(dir, 'oscova.toml'), 'utf8')}
[tools.stamp]
callable = "stamp_tool:stamp"

[providers.stamper]
class = "stamp_provider:Stamper"
`);
  writeFileSync(join(dir, 'agents', 'clock.agent.yaml'), `id: clock
name: Clock
instructions: You are {{ agent_name }}. Answer questions about time.
tools: [current_datetime, stamp]
context_providers: [stamper]
`);
  writeFileSync(join(dir, 'agents', 'broken.agent.yaml'), 'id: broken\ninstructions: Help.\nmemory: maybe\n');
  mkdirSync(join(dir, 'templates', 'bulk'), { recursive: true });
  for (let i = 0; i < BULK_TEMPLATES; i++) writeFileSync(join(dir, 'templates', 'bulk', `t${i}.j2`), `Template ${i}: {{ user_name }}\n`);
}

// ------------------------------------------------------------------------------------------- main

async function main() {
  need(vsix, 'the .vsix to test');
  need(NODE24, 'Node 24');
  need(CODE_SERVER, 'code-server');
  need(OSCOVA_LSP, 'oscova-lsp');
  need(CHROMIUM, 'Debian chromium');

  rmSync(screenshots, { recursive: true, force: true });
  mkdirSync(screenshots, { recursive: true });
  const work = mkdtempSync(join(os.tmpdir(), 'oscova-e2e-'));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  const userData = join(work, 'user-data');
  const extensions = join(work, 'extensions');
  mkdirSync(join(userData, 'User'), { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({
    ...QUIET_SETTINGS,
    'oscova.trace.server': 'messages',
    // code-server rebuilds the extension host's PATH from a login shell, so the server is configured.
    'oscova.server.command': [OSCOVA_LSP],
  }, null, 2));
  const env = {
    ...process.env,
    PATH: `${dirname(NODE24)}:${process.env.PATH}`,
    XDG_CONFIG_HOME: join(work, 'xdg-config'),
    XDG_DATA_HOME: join(work, 'xdg-data'),
    OSCOVA_LSP_LOG: 'INFO',
  };
  delete env[API_KEY_ENV];

  const broken = join(work, 'broken');
  cpSync(join(repo, 'examples', 'broken'), broken, { recursive: true });

  log('probing the server for run commands');
  const offered = await advertisedCommands(OSCOVA_LSP);
  const runsOffered = ['oscova.runAgent', 'oscova.listAgents', 'oscova.cancelRun', 'oscova.previewPrompt'].every((c) => offered.includes(c));
  const testsOffered = ['oscova.listTests', 'oscova.runTest'].every((c) => offered.includes(c));

  const fake = await startFakeOpenAI({ apiKey: API_KEY });
  cleanups.push(() => fake.close());
  const runWs = join(work, 'run-ws');
  writeRunWorkspace(runWs, fake.baseUrl);
  // The evaluations' folder exists from the start and the file is written into it later: a file written into a
  // folder made the same instant can be missed by the editor's file watcher (inotify sees the folder, and the
  // file lands before the folder is watched), which made this step fail once in CI with no file event at all.
  mkdirSync(join(runWs, 'evals'), { recursive: true });
  if (testsOffered) {
    log('recording two runs with the CLI and saving them as agent tests');
    writeFileSync(join(runWs, 'agents', 'greeter.agent.yaml'), GREETER);
    await saveCase(runWs, 'clock', 'What time is it? Use the tool.', 'clock-time');
    await saveCase(runWs, 'greeter', 'Hello there', 'greeting');
  }
  // Workspace settings name the server too (user settings alone raced once in code-server). The
  // untrusted copy's workspace setting names a program that does not exist: in Restricted Mode it must
  // be ignored (restrictedConfigurations), so the server still starts from the user setting.
  const untrustedWs = join(work, 'untrusted-ws');
  const markers = join(work, 'markers');
  writeUntrustedWorkspace(untrustedWs, fake.baseUrl, markers);
  const python = join(dirname(OSCOVA_LSP), 'python');
  need(python, 'the Python of the oscova-lsp install');
  const workspaceSettings = (dir, command) => {
    mkdirSync(join(dir, '.vscode'), { recursive: true });
    writeFileSync(join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'oscova.server.command': command }));
  };
  workspaceSettings(broken, [OSCOVA_LSP]);
  workspaceSettings(runWs, [OSCOVA_LSP]);
  workspaceSettings(untrustedWs, ['/nonexistent/oscova-lsp-from-the-workspace']);

  log('installing the .vsix into a fresh extensions folder');
  const install = spawnSync(CODE_SERVER, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix], { env, encoding: 'utf8' });
  if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
    throw new Error(`installing the .vsix failed:\n${install.stdout}\n${install.stderr}`);
  }

  let csLog = '';
  const untrustedDataDirs = [];
  // Untrusted: a user-data folder of its own, whose user setting names the server command.
  async function startCodeServer(trust, untrustedData = `${userData}-untrusted`, serverCommand = [OSCOVA_LSP]) {
    const port = await freePort();
    log(`starting code-server on port ${port}${trust ? '' : ' with workspace trust enabled'}`);
    const args = ['--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--user-data-dir', trust ? userData : untrustedData,
      '--extensions-dir', extensions, '--disable-telemetry', '--disable-update-check'];
    if (trust) args.push('--disable-workspace-trust');
    else {
      cpSync(join(userData, 'User'), join(untrustedData, 'User'), { recursive: true });
      const file = join(untrustedData, 'User', 'settings.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), 'oscova.server.command': serverCommand }, null, 2));
    }
    const cs = spawn(CODE_SERVER, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    cs.stdout.on('data', (d) => { csLog += d; });
    cs.stderr.on('data', (d) => { csLog += d; });
    const kill = () => { try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* gone */ } };
    cleanups.push(kill);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, 'code-server /healthz', 60_000);
    return { url, kill };
  }
  const { url: baseUrl } = await startCodeServer(true);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  cleanups.push(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1500, height: 950 } })).newPage();
  const shot = (name) => page.screenshot({ path: join(screenshots, `${name}.png`) });
  try {
    async function restrictedMode() {
      // ---------------------------------------------------------------------- restricted mode
      log('restricted mode: diagnostics work, previews import nothing, runs are refused');
      const requestsBefore = fake.state.requests.length;
      const checkMarkers = (when) => {
        const imported = readdirSync(markers);
        if (imported.length) throw new Error(`workspace code was imported in Restricted Mode (${when}): ${imported.join(', ')}`);
      };
      const startPaths = [
        ['the console script', [OSCOVA_LSP]],
        ['python -m oscova_lsp', [python, '-m', 'oscova_lsp']],
        ['python -P -m oscova_lsp', [python, '-P', '-m', 'oscova_lsp']],
      ];
      // A code-server of its own for each start path (the user setting is read at start).
      for (const [i, [name, command]] of startPaths.entries()) {
        const untrustedData = `${userData}-untrusted-${i}`;
        untrustedDataDirs.push(untrustedData);
        const untrusted = await startCodeServer(false, untrustedData, command);
        const page2 = await page.context().newPage();
        await page2.goto(`${untrusted.url}/?folder=${encodeURIComponent(untrustedWs)}`);
        await page2.waitForSelector('.monaco-workbench', { timeout: 90_000 });
        // Depending on the startup prompt setting VS Code asks, or opens the folder in Restricted Mode.
        const dontTrust = page2.getByRole('button', { name: /don.t trust/i }).first();
        if (await dontTrust.waitFor({ timeout: 5_000 }).then(() => true, () => false)) await dontTrust.click();
        await page2.locator('.statusbar-item').filter({ hasText: 'Restricted Mode' }).first().waitFor({ timeout: 30_000 });
        await page2.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60_000 });
        await waitFor(() => oscovaLog(untrustedData).includes(`[client] starting ${command.join(' ')} (setting)`),
          `the server started as ${command.join(' ')}`, 60_000);
        // Diagnostics arrive, edits included.
        await explorerOpen(page2, 'agents', 'broken.agent.yaml');
        await page2.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 60_000 });
        await page2.locator('.monaco-editor .view-lines').first().click();
        await page2.keyboard.press('Control+End');
        await page2.keyboard.type(`start_path_${i}: x\n`);
        await page2.keyboard.press('Control+Shift+M');
        await waitFor(async () => {
          const rows = await problems(page2);
          return rows.some((r) => r.includes('OSC002')) && rows.some((r) => r.includes(`start_path_${i}`));
        }, `OSC002 and OSC003 in Problems (${name})`, 60_000);
        // Preview: the built-in rendering, and what was not loaded.
        await runCommand(page2, 'Oscova: Preview Prompt');
        await pickItem(page2, 'clock');
        await page2.locator('.notifications-toasts').filter({ hasText: 'Restricted Mode' }).first().waitFor({ timeout: 20_000 });
        const preview = page2.locator('.monaco-editor .view-lines').filter({ hasText: 'Prompt preview' }).first();
        await preview.waitFor({ timeout: 30_000 });
        const previewLines = await preview.elementHandle();
        // The editor renders only the lines in view, wrapped: page through it, collecting the text
        // (compared without white space, which wrapping adds).
        const bare = (text) => text.replace(/\s+/g, '');
        let seen = '';
        const wanted = ['Restricted Mode', 'tool `stamp` (`stamp_tool:stamp`): not loaded: workspace not trusted',
          'provider `stamper` (`stamp_provider:Stamper`): not loaded: workspace not trusted', 'You are Clock.'];
        await waitFor(async () => {
          seen += `\n${await previewLines.innerText()}`;
          if (wanted.every((w) => bare(seen).includes(bare(w)))) return true;
          await page2.keyboard.press('PageDown');
          return false;
        }, `the Restricted Mode preview (${name})`, 20_000).catch((error) => {
          throw new Error(`${error.message}\npreview:\n${seen}`);
        });
        if (i === 0) await page2.screenshot({ path: join(screenshots, '06-restricted-mode-preview.png') });
        // Run: refused, with the reason.
        await runCommand(page2, 'Oscova: Run Agent');
        await page2.locator('.notifications-toasts').filter({ hasText: 'only in a trusted workspace' }).waitFor({ timeout: 20_000 });
        if (i === 0) await page2.screenshot({ path: join(screenshots, '07-restricted-mode-run-refused.png') });
        await page2.close();
        untrusted.kill();
        checkMarkers(`server started as ${name}`);
        log(`restricted mode, server started as ${name} in the workspace folder: diagnostics arrived, the preview shows the built-in rendering, Run Agent refused, no workspace module imported`);
      }
      if (fake.state.requests.length !== requestsBefore) throw new Error('a run reached the model in Restricted Mode');
    }

    // A Test Explorer row, and its state: its aria-label ("name (Passed)") and its icon (codicon-testing-passed-icon).
    const row = (name) => page.locator('.part.sidebar .monaco-list-row').filter({ hasText: name }).first();
    const state = async (name) => {
      const label = (await row(name).getAttribute('aria-label')) ?? '';
      const icons = await row(name).locator('.codicon').evaluateAll((els) => els.map((e) => e.className).join(' '));
      const icon = /testing-(passed|failed|error)/.exec(icons)?.[1];
      return `${label}${icon ? ` (${icon[0].toUpperCase()}${icon.slice(1)})` : ''}`;
    };

    async function evaluations() {
      // ---------------------------------------------------------------------------- evaluations
      if (!['oscova.listEvals', 'oscova.runEval'].every((c) => offered.includes(c))) {
        if (CI) throw new Error(`the server does not advertise oscova.listEvals and oscova.runEval (it offers: ${JSON.stringify(offered)})`);
        log('EVALUATIONS NOT TESTED: the server does not advertise oscova.listEvals / oscova.runEval');
        return false;
      }
      // Written now, not with the workspace: "Run All Tests" of the agent-test step would run it too.
      log('evaluations: a new evaluation file is listed in the Test Explorer, run there, and its matrix shown');
      writeFileSync(join(runWs, 'evals', 'clock.eval.yaml'), CLOCK_EVAL);
      const requestsBefore = fake.state.requests.length;
      const judgedBefore = fake.state.judged.length;
      if (!await page.locator('.part.sidebar .test-explorer').isVisible()) {
        // After a failed agent test, the icon's badge ("1 failed tests") covers it, and takes the click for it.
        await page.locator('.activitybar .action-item [aria-label^="Testing"]').first().click({ force: true });
      }
      const file = row('clock.eval.yaml');
      await file.waitFor({ timeout: 60_000 }).catch(async (error) => {
        await shot('failure-evals-listed');
        throw error;
      });
      if (!await row('exact-answer').isVisible()) { // a new file's item may come collapsed
        await file.click();
        if (await file.getAttribute('aria-expanded') === 'false') await file.press('ArrowRight');
      }
      await row('tells-the-time').waitFor({ timeout: 20_000 });
      await row('exact-answer').waitFor({ timeout: 10_000 });
      await file.hover();
      await file.locator('.action-label[aria-label^="Run Test"]').first().click();
      await waitFor(async () => (await state('tells-the-time')).includes('(Passed)') && (await state('exact-answer')).includes('(Failed)'),
        'tells-the-time to pass and exact-answer to fail', 90_000).catch(async (error) => {
        await shot('failure-evals-run');
        throw new Error(`${error.message}: tells-the-time "${await state('tells-the-time')}", exact-answer "${await state('exact-answer')}"`);
      });
      // The judge was asked once, about the case with a judge assertion, with the agent's answer.
      const judged = fake.state.judged.slice(judgedBefore);
      if (judged.length !== 1 || !judged[0].answer.includes('The clock tool says it is late. Done.')) {
        throw new Error(`the judge was asked ${judged.length} times: ${JSON.stringify(judged)}`);
      }
      const agentRequests = fake.state.requests.length - requestsBefore - judged.length;
      if (agentRequests !== 4) throw new Error(`two cases of two model calls each made ${agentRequests} requests`);

      // The results view: the matrix of the run (a row per case, a column per model) and the failure below it.
      const results = await waitFor(async () => {
        for (const f of page.frames()) {
          if ((await f.locator('h1').allInnerTexts().catch(() => [])).includes('Oscova evaluation')) return f;
        }
        return undefined;
      }, 'the Oscova Evaluation results view', 30_000).catch(async (error) => {
        await shot('failure-evals-results-view');
        throw error;
      });
      const header = (await results.locator('table tr').first().innerText()).replace(/\s+/g, ' ').trim();
      const cell = async (name) => (await results.locator('tr').filter({ has: results.locator(`th:text-is("${name}")`) }).locator('td').innerText())
        .replace(/\s+/g, ' ').trim();
      const [passedCell, failedCell] = [await cell('tells-the-time'), await cell('exact-answer')];
      if (header !== 'case default') throw new Error(`the matrix's header row: "${header}"`);
      if (!/^✓ 1\/1 18 tok · \d+\.\ds$/.test(passedCell)) throw new Error(`the matrix cell of tells-the-time: "${passedCell}"`);
      if (!/^✗ 0\/1 18 tok · \d+\.\ds$/.test(failedCell)) throw new Error(`the matrix cell of exact-answer: "${failedCell}"`);
      const shade = await results.locator('td').first().getAttribute('style');
      if (!shade?.includes('hsl(120,')) throw new Error(`the passing cell is not green: ${shade}`);
      const failures = (await results.locator('body').innerText()).replace(/\s+/g, ' ');
      if (!failures.includes('✗ exact-answer on default') || !failures.includes('expected the answer "The clock tool says it is early. Done."')) {
        throw new Error(`the results view's failures: ${failures}`);
      }
      log(`evaluations: tells-the-time passed (the judge asked once), exact-answer failed; the results view's cells "${passedCell}", "${failedCell}"`);
      await shot('12-eval-results-view');

      // The failed case's drifted answer in the diff view: what was expected beside what the agent answered.
      await runCommand(page, 'Test Results: Focus on Test Results View');
      const panel = page.locator('.part.panel');
      const diffRow = panel.locator('.monaco-list-row[aria-level="3"]').filter({ hasText: '[default] equals:' });
      // The diff's two sides side by side, each wide enough to read: the empty secondary side bar closed.
      if (await page.locator('.part.auxiliarybar').isVisible()) await runCommand(page, 'Hide Secondary Side Bar');
      await waitFor(async () => {
        if (!await diffRow.count()) {
          const caseRow = panel.locator('.monaco-list-row').filter({ hasText: 'exact-answer' }).first();
          await caseRow.click();
          if (await caseRow.getAttribute('aria-expanded') === 'false') await caseRow.press('ArrowRight');
        }
        await diffRow.last().click();
        const diffs = await page.locator('.monaco-diff-editor').allInnerTexts();
        return diffs.map((t) => t.replace(/\s+/g, ' ')) // the editor's spaces are no-break spaces
          .some((t) => t.includes('The clock tool says it is early. Done.') && t.includes('The clock tool says it is late. Done.'));
      }, 'the diff view of the expected and the actual answer', 30_000, 1000).catch(async (error) => {
        await shot('failure-evals-diff-view');
        throw new Error(`${error.message}\n${await panel.innerText().catch(() => '(no panel)')}`);
      });
      log('evaluations: the failed case\'s message opened the diff view of the expected and the actual answer');
      await shot('13-eval-diff-view');
      return true;
    }

    let savedFromRunView = false;
    async function agentTests() {
      // ---------------------------------------------------------------------------- agent tests
      if (!testsOffered) {
        if (CI) throw new Error(`the server does not advertise oscova.listTests and oscova.runTest (it offers: ${JSON.stringify(offered)})`);
        log('AGENT TESTS NOT TESTED: the server does not advertise oscova.listTests / oscova.runTest');
        return false;
      }
      log('agent tests: the Test Explorer lists the cases');
      const requestsBefore = fake.state.requests.length;
      await page.locator('.activitybar .action-item [aria-label^="Testing"]').first().click();
      await row('clock-time').waitFor({ timeout: 60_000 });
      await row('greeting').waitFor({ timeout: 10_000 });
      const rowsText = await page.locator('.test-explorer .monaco-list-row').allInnerTexts();
      if (!rowsText.some((r) => r.includes('clock-time') && r.includes('clock'))) throw new Error(`the Test Explorer rows do not name the agent: ${rowsText.join(' | ')}`);
      await shot('08-test-explorer-cases');

      log('agent tests: Run All Tests');
      await runCommand(page, 'Test: Run All Tests');
      if (savedFromRunView) await row('from-the-run-view').waitFor({ timeout: 30_000 });
      await waitFor(async () => (await state('clock-time')).includes('(Passed)') && (await state('greeting')).includes('(Passed)')
        && (!savedFromRunView || (await state('from-the-run-view')).includes('(Passed)')),
        'both cases to pass', 90_000).catch(async (error) => {
        await shot('failure-tests-run-all');
        throw new Error(`${error.message}: clock-time "${await state('clock-time')}", greeting "${await state('greeting')}"`);
      });
      log(`agent tests: ${await state('clock-time')}, ${await state('greeting')}`);
      await shot('09-test-explorer-passed');

      log('agent tests: the clock agent changes, its case alone is run and fails with the diff');
      const clock = join(runWs, 'agents', 'clock.agent.yaml');
      writeFileSync(clock, readFileSync(clock, 'utf8').replace('Answer questions about time', 'Answer questions about time zones'));
      await row('clock-time').hover();
      await row('clock-time').locator('.action-label[aria-label^="Run Test"]').first().click();
      await waitFor(async () => (await state('clock-time')).includes('(Failed)'), 'the drifted case to fail', 90_000).catch(async (error) => {
        await shot('failure-tests-drift');
        throw new Error(`${error.message}: clock-time "${await state('clock-time')}"`);
      });
      if (!(await state('greeting')).includes('(Passed)')) throw new Error(`the case that was not run changed: greeting "${await state('greeting')}"`);
      // The failure: its message in the Test Results view, with the diff of the recorded and the current request.
      await runCommand(page, 'Test Results: Focus on Test Results View');
      const panel = page.locator('.part.panel');
      await panel.locator('.monaco-list-row').filter({ hasText: 'now sends something other than what was recorded' }).first()
        .waitFor({ timeout: 30_000 });
      await waitFor(async () => {
        const text = (await panel.innerText()).replace(/\s+/g, ' ');
        return text.includes('model request 1 differs in the instructions')
          && text.includes('-You are Clock. Answer questions about time with') && text.includes('+You are Clock. Answer questions about time zones with');
      }, 'the diff of the recorded and the current instructions in Test Results', 30_000).catch(async (error) => {
        await shot('failure-tests-diff');
        throw new Error(`${error.message}\n${await panel.innerText().catch(() => '(no panel)')}`);
      });
      await shot('10-test-explorer-drift-diff');
      // Selecting the failure's message in Test Results shows the editor's diff view: recorded beside current.
      const failureRow = panel.locator('.monaco-list-row').filter({ hasText: 'now sends something other than what was recorded' }).last();
      await failureRow.click();
      if (await failureRow.getAttribute('aria-expanded') === 'false') await failureRow.press('ArrowRight');
      const messageRow = panel.locator('.monaco-list-row[aria-level="3"]').filter({ hasText: 'now sends something other than' });
      if (await messageRow.count()) await messageRow.first().click();
      await waitFor(async () => {
        const diffs = await page.locator('.monaco-diff-editor').allInnerTexts();
        return diffs.some((t) => {
          const text = t.replace(/\s+/g, ' ');
          return text.includes('Answer questions about time zones with') && text.includes('Answer questions about time with');
        });
      }, 'the diff view of the recorded and the current request', 30_000).catch(async (error) => {
        await shot('failure-tests-diff-view');
        throw error;
      });
      await shot('11-test-explorer-drift-diff-view');
      if (fake.state.requests.length !== requestsBefore) throw new Error('a replay reached the model endpoint');
      log(`agent tests: listed, run all (${savedFromRunView ? 3 : 2} passed), the drifted case failed with the diff of the instructions; no model request`);
      return true;
    }

    async function setApiKey() {
      log('Oscova: Set API Key');
      await runCommand(page, 'Oscova: Set API Key');
      const keyInput = await quickInputVisible(page);
      await waitFor(async () => (await keyInput.getAttribute('type')) === 'password', 'the password input box', 15_000);
      await keyInput.fill(API_KEY);
      await keyInput.press('Enter');
      await page.locator('.notifications-toasts').filter({ hasText: 'the key is set' }).waitFor({ timeout: 30_000 });
    }
    const debugging = { fake, shot, log, waitFor, explorerOpen, runCommand, quickInputVisible };

    if (process.env.OSCOVA_E2E_ONLY === 'debug') { // while developing the debugger part: that part alone
      await openWorkbench(page, baseUrl, runWs);
      await explorerOpen(page, 'agents', 'clock.agent.yaml');
      await page.locator('.monaco-editor .view-lines').first().waitFor();
      // A loaded machine can time out the `workspaceContains` activation: a command activates as well.
      await runCommand(page, 'Oscova: Show Server Output');
      await waitFor(() => oscovaLog(userData).includes('[client] starting'), 'the server starting', 90_000);
      await setApiKey();
      await debugSession(page, debugging);
      return 'debugger only';
    }

    if (process.env.OSCOVA_E2E_ONLY === 'evals') { // while developing the evaluation part: that part alone
      await openWorkbench(page, baseUrl, runWs);
      await explorerOpen(page, 'agents', 'clock.agent.yaml');
      await runCommand(page, 'Oscova: Show Server Output');
      await waitFor(() => oscovaLog(userData).includes('[client] starting'), 'the server starting', 90_000);
      await setApiKey();
      return await evaluations() ? 'evaluations only' : 'EVALUATIONS NOT TESTED';
    }

    if (process.env.OSCOVA_E2E_ONLY === 'tests') { // while developing the agent-test part: that part alone
      await openWorkbench(page, baseUrl, runWs);
      const tested = await agentTests();
      return tested ? 'agent tests only' : 'AGENT TESTS NOT TESTED';
    }

    // ----------------------------------------------------------------------------- diagnostics
    log('opening examples/broken');
    await openWorkbench(page, baseUrl, broken);
    await explorerOpen(page, 'agents', 'providers.agent.yaml');
    log('waiting for squiggles in agents/providers.agent.yaml');
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 90_000 });
    await page.keyboard.press('Control+Shift+M');
    const expectedDefinition = [
      ['OSC010', 'null entry in `context_providers`'],
      ['OSC011', '`memory` has the state key `MemoryContextProvider`'],
      ['OSC012', '`environment` uses the state key `InMemoryChatHistoryProvider`'],
      ['OSC013', 'unknown provider type `memroy`; did you mean `memory`?'],
      ['OSC014', '`library` contributes nothing here'],
    ];
    const rows = await waitFor(async () => {
      const r = await problems(page);
      return expectedDefinition.every(([code, text]) => r.some((row) => row.includes(code) && row.includes(text))) ? r : undefined;
    }, `Problems rows ${expectedDefinition.map(([c]) => c).join(', ')}`, 60_000).catch(async (error) => {
      console.log('Problems rows:', await problems(page));
      throw error;
    });
    const squiggles = await page.locator('.monaco-editor .squiggly-error').count();
    if (squiggles < 3) throw new Error(`expected at least 3 error squiggles (OSC010, OSC011, OSC012, OSC013), saw ${squiggles}`);
    if (!rows.some((row) => /oscova\(OSC010\)/.test(row) || (row.includes('OSC010') && row.includes('oscova')))) {
      throw new Error(`Problems rows do not show the source "oscova": ${rows.join(' | ')}`);
    }
    log(`definition: ${squiggles} error squiggles, Problems rows ${expectedDefinition.map(([c]) => c).join(' ')}`);
    await shot('01-definition-diagnostics');

    await explorerOpen(page, 'templates', 'agent.j2');
    const expectedTemplate = [
      ['OSC101', '`ticket_count` is not bound by the `personal` provider'],
      ['OSC102', '`current_time` changes every minute'],
    ];
    await waitFor(async () => {
      const r = await problems(page);
      return expectedTemplate.every(([code, text]) => r.some((row) => row.includes(code) && row.includes(text)));
    }, `template Problems rows ${expectedTemplate.map(([c]) => c).join(', ')}`, 60_000).catch(async (error) => {
      console.log('Problems rows:', await problems(page));
      throw error;
    });
    // The contributed `jinja` language is the editor's mode for .j2.
    const mode = await page.locator('.statusbar-item[id="status.editor.mode"]').innerText();
    if (!/jinja/i.test(mode)) throw new Error(`the language mode of agent.j2 is "${mode}", not Jinja`);
    const status = await page.locator('.statusbar-item').filter({ hasText: 'Oscova' }).first().innerText();
    log(`template: Problems rows ${expectedTemplate.map(([c]) => c).join(' ')}; language mode "${mode.trim()}"; status bar "${status.trim()}"`);
    await shot('02-template-diagnostics');

    // ------------------------------------------------------------------------------------ runs
    if (!runsOffered) {
      const message = `the server does not advertise the run commands (it offers: ${JSON.stringify(offered)})`;
      if (CI) throw new Error(`${message}: the run part of the e2e cannot pass`);
      log(`RUN PART NOT TESTED: ${message}`);
      await restrictedMode();
      return 'diagnostics and restricted mode; RUN PART NOT TESTED';
    }
    log('opening the run workspace');
    await openWorkbench(page, baseUrl, runWs);
    await explorerOpen(page, 'agents', 'clock.agent.yaml');
    await page.locator('.monaco-editor .view-lines').first().waitFor();

    await setApiKey();

    log('Oscova: Run Agent (streamed answer and a tool call)');
    await runCommand(page, 'Oscova: Run Agent');
    await pickItem(page, 'clock');
    const inputBox = await quickInputVisible(page);
    await waitFor(async () => (await inputBox.inputValue()) === 'What time is it? Use the tool.', 'the input box prefilled with example_input', 15_000);
    await inputBox.press('Enter');
    const frame = runFrame(page);
    await frame.locator('[data-testid=status]').filter({ hasText: 'Completed' }).waitFor({ timeout: 60_000 }).catch(async (error) => {
      await shot('failure-run');
      const text = await frame.locator('body').innerText().catch(() => '(no Run view)');
      throw new Error(`${error.message}\nRun view:\n${text}`);
    });
    const answer = (await frame.locator('[data-testid=answer]').allInnerTexts()).join('\n');
    if (!answer.includes('The clock tool says it is late. Done.')) throw new Error(`unexpected answer in the Run view: ${answer}`);
    const tool = frame.locator('details.tool').filter({ hasText: 'current_datetime' });
    if (await tool.count() !== 1) throw new Error('the Run view shows no current_datetime tool call');
    const toolText = await tool.innerText();
    if (!/result/i.test(toolText) || !/\d{4}-\d{2}-\d{2}/.test(toolText)) throw new Error(`the tool call has no result: ${toolText}`);
    // The refused notes: the Run view says what was left out and why, and shows none of their text.
    const notices = await frame.locator('[data-testid=notice]').allInnerTexts();
    if (notices.length !== 1 || !notices[0].startsWith('PrivateNotesContextProvider: The private notes were left out of the prompt: ')) {
      throw new Error(`the Run view's notices: ${JSON.stringify(notices)}`);
    }
    if ((await frame.locator('body').innerText()).includes(OTHERS_NOTES.split(':')[0])) throw new Error('the Run view shows the refused notes');
    const runInput = await frame.locator('[data-testid=input]').innerText();
    if (runInput !== 'What time is it? Use the tool.') throw new Error(`the Run view shows the input "${runInput}"`);
    // Tokens and time per call (`modelCall` events): the fake endpoint reports usage on its answer only.
    const tokens = await frame.locator('[data-testid=tokens]').innerText();
    if (tokens !== '18 tokens') throw new Error(`the Run view's token total: "${tokens}"`);
    const calls = await frame.locator('[data-testid=calls-summary]').innerText();
    if (!/^2 model calls · 11 in · 7 out · [\d.]+ m?s; 1 tool call · [\d.]+ m?s$/.test(calls)) throw new Error(`the Run view's calls: "${calls}"`);
    const toolTime = await tool.locator('[data-testid=tool-time]').innerText();
    if (!/^\s*· [\d.]+ m?s$/.test(toolTime)) throw new Error(`the tool call's time: "${toolTime}"`);
    // The assembled instructions (from oscova.previewPrompt), collapsed until opened.
    await frame.locator('details.instructions summary').click();
    const instructions = await frame.locator('pre.instructions').innerText();
    if (!instructions.includes('You are Clock. Answer questions about time')) throw new Error(`the Run view's instructions: ${instructions}`);
    const authorized = fake.state.requests.filter((r) => r.auth).length;
    if (authorized < 2) throw new Error(`the fake endpoint saw ${authorized} requests with the key set by Set API Key`);
    log(`run completed: answer streamed, tool call current_datetime with its result; ${fake.state.requests.length} model requests`);
    await shot('03-run-completed');
    if (testsOffered) {
      // "Save as test case" in the Run view: a third case; "Compare with previous run": the diff view of this
      // run's model requests and those of the clock run recorded with the CLI before.
      await frame.locator('[data-testid=save-case]').click();
      const caseName = await quickInputVisible(page);
      await waitFor(async () => (await caseName.inputValue()) === 'clock', 'the case name prefilled with the agent id', 15_000);
      await caseName.fill('from-the-run-view');
      await caseName.press('Enter');
      await page.locator('.notifications-toasts').filter({ hasText: 'saved the test case from-the-run-view' }).waitFor({ timeout: 30_000 });
      savedFromRunView = true;
      await frame.locator('[data-testid=compare]').click();
      await page.locator('.tabs-container .tab').filter({ hasText: /clock: model requests of run/ }).first().waitFor({ timeout: 30_000 });
      const diff = page.locator('.monaco-diff-editor').first();
      // Both runs called the clock tool: the diff opens at its two results (the times differ).
      await waitFor(async () => (await diff.innerText()).replace(/\s+/g, ' ').includes('[tool call_1]'), 'the compared runs\' requests', 20_000);
      log('Run view: saved the run as a test case; Compare with previous run opened the diff of the two runs\' model requests');
      await shot('05a-compare-with-previous-run');
      await runCommand(page, 'Oscova: Show Run View'); // the diff may have taken the Run view's column
      await frame.locator('[data-testid=status]').filter({ hasText: 'Completed' }).waitFor({ timeout: 20_000 });
    }
    // Its transcript (.oscova/runs/…) opens from the Run view.
    await frame.locator('button', { hasText: 'Open transcript' }).click();
    await page.locator('.tabs-container .tab').filter({ hasText: /\.jsonl?$/ }).first().waitFor({ timeout: 20_000 });
    log('the run transcript opened from the Run view');
    await runCommand(page, 'Oscova: Preview Prompt');
    await pickItem(page, 'clock');
    await page.locator('.tabs-container .tab').filter({ hasText: 'clock.md' }).first().waitFor({ timeout: 20_000 });
    await page.locator('.monaco-editor .view-lines').filter({ hasText: 'Prompt preview' }).first().waitFor({ timeout: 10_000 });
    log('Oscova: Preview Prompt opened the assembled prompt');

    log('a second run, cancelled from the Run view');
    const closedBefore = fake.state.closedEarly;
    await runCommand(page, 'Oscova: Run Agent');
    await pickItem(page, 'clock');
    const inputBox2 = await quickInputVisible(page);
    await inputBox2.fill('Take it slow, please.');
    await inputBox2.press('Enter');
    await frame.locator('[data-testid=answer]').filter({ hasText: 'Thinking slowly' }).waitFor({ timeout: 60_000 });
    const statusBar = await page.locator('.statusbar-item').filter({ hasText: 'Oscova' }).first().innerText();
    if (!/1 run/.test(statusBar)) throw new Error(`the status bar does not show the run in progress: "${statusBar}"`);
    await shot('04-run-streaming');
    await frame.locator('[data-testid=cancel]').click();
    await frame.locator('[data-testid=status]').filter({ hasText: 'Cancelled' }).waitFor({ timeout: 30_000 });
    await waitFor(() => fake.state.closedEarly > closedBefore, 'the model stream to be closed by the cancel', 15_000);
    log('run cancelled: the Run view says Cancelled and the HTTP stream was closed');
    await shot('05-run-cancelled');

    await debugSession(page, debugging); // before the agent tests edit clock.agent.yaml
    const tested = await agentTests();
    const evaluated = await evaluations();
    await restrictedMode();
    return `diagnostics, runs, ${tested ? 'agent tests' : 'AGENT TESTS NOT TESTED'}, ${evaluated ? 'evaluations' : 'EVALUATIONS NOT TESTED'}, the debugger and restricted mode`;
  } catch (error) {
    for (const [i, p] of page.context().pages().entries()) {
      await p.screenshot({ path: join(screenshots, `failure-${i}.png`) }).catch(() => undefined);
    }
    dumpLogs(userData);
    for (const dir of untrustedDataDirs) dumpLogs(dir);
    console.log(`----- code-server output (last 40 lines)\n${csLog.split('\n').slice(-40).join('\n')}`);
    throw error;
  }
}

let code = 0;
try {
  const what = await main();
  log(`PASSED (${what}); screenshots in ${screenshots}`);
} catch (error) {
  console.error(`[e2e] FAILED: ${error.stack ?? error}`);
  code = 1;
} finally {
  for (const cleanup of cleanups.reverse()) {
    try { await cleanup(); } catch { /* best effort */ }
  }
}
process.exit(code);
