// The debugger part of the end-to-end test (e2e.mjs calls it in the run workspace, the API key set):
// the `model` function breakpoint (added in the Breakpoints view), the "Debug agent" lens, the stop before
// the first model request, the instructions read in the Variables view
// and edited (Set Value), continue to the second stop and to the end. The endpoint must receive the edited instructions, and the
// session must end with the run's answer in the Debug Console.

const EDITED = 'Answer with one word.';

export async function debugSession(page, { fake, shot, log, waitFor, explorerOpen, runCommand, quickInputVisible }) {
  log('debugger: the `model` function breakpoint, then the Debug agent lens');
  const tab = page.locator('.tabs-container .tab').filter({ hasText: 'clock.agent.yaml' }).first();
  if (await tab.count()) await tab.click(); // open already (clicking `agents` again would fold it)
  else await explorerOpen(page, 'agents', 'clock.agent.yaml');
  await page.locator('.monaco-editor .view-lines').first().waitFor();
  // A breakpoint on the instructions line (F9): the run stops before each model call that sends it.
  await page.locator('.monaco-editor .view-line').filter({ hasText: 'instructions:' }).first().click();
  await page.keyboard.press('F9');
  await page.locator('.monaco-editor .codicon-debug-breakpoint').first().waitFor({ timeout: 20_000 });
  // The `model` function breakpoint (Run and Debug's Breakpoints view shows its input now that a breakpoint
  // exists), then the line's breakpoint removed again (F9): the stops below are the function breakpoint's.
  await runCommand(page, 'Function Breakpoint'); // "Debug: New Function Breakpoint" in the palette
  const name = page.locator('.debug-breakpoints input').first();
  await name.waitFor({ state: 'visible', timeout: 20_000 });
  await name.fill('model');
  await name.press('Enter');
  await page.locator('.debug-breakpoints .monaco-list-row').filter({ hasText: /^\s*model\s*$/ }).first().waitFor({ timeout: 20_000 });
  await page.locator('.monaco-editor .view-line').filter({ hasText: 'instructions:' }).first().click();
  await page.keyboard.press('F9');
  await waitFor(async () => (await page.locator('.monaco-editor .codicon-debug-breakpoint').count()) === 0,
    'the line breakpoint removed', 20_000);
  const lens = page.locator('.monaco-editor .codelens-decoration a').filter({ hasText: 'Debug agent' }).first();
  await lens.waitFor({ timeout: 60_000 });
  const before = fake.state.requests.length;
  await lens.click();
  const input = await quickInputVisible(page);
  await waitFor(async () => (await input.inputValue()) === 'What time is it? Use the tool.', 'the input box prefilled', 15_000);
  await input.press('Enter');

  log('debugger: stopped before model call 1');
  await page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: 90_000 });
  await page.locator('.debug-call-stack .monaco-list-row').filter({ hasText: 'model call 1' }).first().waitFor({ timeout: 60_000 });
  // (the only breakpoint set is `model`: the line's was removed above, so this stop is the function breakpoint's)
  if (fake.state.requests.length !== before) throw new Error('the request was sent before the run was continued');
  const context = page.locator('.debug-variables .monaco-list-row').filter({ hasText: /^\s*Context\s*$/ }).first();
  await context.waitFor({ timeout: 30_000 });
  const instructions = page.locator('.debug-variables .monaco-list-row').filter({ hasText: 'instructions' }).first();
  // The scope opens on a click, unless VS Code kept it open (it remembers expanded scopes): click until shown.
  await waitFor(async () => {
    if (await instructions.isVisible()) return true;
    await context.click();
    await page.waitForTimeout(1_000);
    return instructions.isVisible();
  }, 'the Context scope open', 30_000);
  const shown = await instructions.innerText();
  if (!shown.includes('You are Clock')) throw new Error(`the instructions variable shows "${shown}"`);
  await shot('08-debug-stopped-at-model');

  log('debugger: Set Value on the instructions');
  await instructions.click();
  await page.keyboard.press('F2');
  const editor = page.locator('.debug-variables .monaco-list-row input').first();
  await editor.waitFor({ state: 'visible', timeout: 15_000 });
  await editor.fill(EDITED);
  await editor.press('Enter');
  await page.locator('.debug-variables .monaco-list-row').filter({ hasText: EDITED }).first().waitFor({ timeout: 20_000 });
  await shot('09-debug-edited');

  const continueButton = page.locator('.debug-toolbar .codicon-debug-continue').first();
  await continueButton.click();
  await waitFor(() => fake.state.requests.length > before, 'the first model request', 30_000);
  const sent = fake.state.requests[before].body.messages[0];
  if (sent.role !== 'system' || sent.content !== EDITED) throw new Error(`the endpoint received ${JSON.stringify(sent)}`);

  log('debugger: stopped before model call 2; continue to the end');
  await page.locator('.debug-call-stack .monaco-list-row').filter({ hasText: 'model call 2' }).first().waitFor({ timeout: 60_000 });
  await continueButton.click();
  await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60_000 });
  if (fake.state.requests.length !== before + 2) throw new Error(`${fake.state.requests.length - before} requests, not 2`);
  await runCommand(page, 'Debug Console: Focus on Debug Console View');
  await page.locator('.repl').filter({ hasText: 'completed' }).first().waitFor({ timeout: 20_000 });
  await shot('10-debug-completed');
  // Continuing quickly races VS Code's own requests for the stop's views: their answers must pop up nothing.
  const popped = await page.locator('.notification-toast').filter({ has: page.locator('.codicon-error') }).allInnerTexts();
  if (popped.length) throw new Error(`the debug session popped up an error: ${popped.join(' | ')}`);
  log('debugger: stopped before the model call, read and edited the instructions, the endpoint got the edit, the run completed');
}
