// What both end-to-end scenarios use: waiting, logs of the extension, and the workbench driven as a user
// drives it (e2e.mjs: the extension with a configured server; bundled.mjs: the server the package carries).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

const t0 = Date.now();

/** The browser flags of a headless run here (Debian chromium). */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--disable-dev-shm-usage'];

/** The user settings of a fresh code-server: no start page, telemetry, updates or AI features. */
export const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none',
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'chat.disableAIFeatures': true,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'git.enabled': false,
  'window.restoreWindows': 'none',
  'files.hotExit': 'off',
};

export function log(message) {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${message}`);
}

export function need(value, what) {
  if (!value || (typeof value === 'string' && value.startsWith('/') && !existsSync(value))) {
    throw new Error(`missing ${what}: ${value ?? '(unset)'} (run e2e/run.sh, which installs it)`);
  }
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on('error', reject);
  });
}

export async function waitFor(fn, what, timeoutMs = 60_000, everyMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}


/** The log files under a user-data folder whose names match `pattern`. */
export function logFiles(userData, pattern) {
  const found = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (pattern.test(name)) found.push(p);
    }
  };
  try { walk(join(userData, 'logs')); } catch { /* none yet */ }
  return found;
}

/** The text of the extension's output channel logs. */
export function oscovaLog(userData) {
  return logFiles(userData, /Oscova\.log$/).map((file) => readFileSync(file, 'utf8')).join('\n');
}

export function dumpLogs(userData) {
  // The extension's output channel and the extension host log, to see why a step failed.
  for (const file of logFiles(userData, /Oscova|exthost\.log|remoteagent\.log/i)) {
    const text = readFileSync(file, 'utf8');
    console.log(`----- ${file} (last 60 lines)\n${text.split('\n').slice(-60).join('\n')}`);
  }
}

// ------------------------------------------------------------------------------------ workbench UI

export async function openWorkbench(page, baseUrl, folder) {
  await page.goto(`${baseUrl}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });
  await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60_000 });
}

export async function explorerOpen(page, ...names) {
  for (const name of names) {
    const row = page.locator(`.explorer-folders-view .monaco-list-row[aria-label="${name}"]`).first();
    await row.waitFor({ timeout: 30_000 });
    await row.click();
  }
}

export async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-widget .monaco-list-row:visible').filter({ hasText: title }).first();
  await row.waitFor({ timeout: 15_000 });
  await input.press('Enter'); // the best match is selected; a click can land on a row the list re-renders
}

// Picks an item of the quick pick a command opened (the keyboard way: the palette's rows are re-used).
export async function pickItem(page, text) {
  const input = page.locator('.quick-input-widget input');
  await waitFor(async () => !(await input.inputValue()).startsWith('>'), 'the quick pick replacing the command palette', 30_000);
  await input.fill(text);
  await page.locator('.quick-input-widget .monaco-list-row:visible').filter({ hasText: text }).first().waitFor({ timeout: 30_000 });
  await input.press('Enter');
}

export async function quickInputVisible(page) {
  await page.locator('.quick-input-widget').waitFor({ state: 'visible', timeout: 20_000 });
  return page.locator('.quick-input-widget input');
}

export async function problems(page) {
  return page.locator('.markers-panel .monaco-list-row').allInnerTexts();
}

export function runFrame(page) {
  return page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

