// The web console in a real browser (issue 40): Debian's chromium driven by playwright-core (no
// browser download). A client without elicitation asks; the person approves or denies in the page;
// a changed tool is accepted in the page; the audit table shows the calls. Each page's screenshot
// is saved to a temporary folder; with TOOLFENCE_UPDATE_SCREENSHOTS=1 to docs/console/ (the
// README shows them), so a test run leaves the checkout as it found it.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gatewayClient, resultText } from './helpers.js';
import { type ConsoleHarness, consoleHarness, tracked, until } from './support/console-harness.js';

const SHOTS =
  process.env.TOOLFENCE_UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../docs/console/', import.meta.url))
    : join(tmpdir(), `toolfence-console-shots-${process.pid}`);

/** Debian's chromium on PATH (scripts/system-programs.mjs installs it for `pnpm check`). */
function chromiumPath(): string {
  for (const folder of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of ['chromium', 'chromium-browser']) {
      try {
        accessSync(join(folder, name), constants.X_OK);
        return join(folder, name);
      } catch {}
    }
  }
  throw new Error(
    'chromium is not on PATH: install Debian\'s "chromium" (README: System programs)',
  );
}

let browser: Browser;
const { open, closeAll, harness } = tracked();

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Chromium's sandbox cannot start as root (CI containers); a normal user keeps it.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  if (process.env.TOOLFENCE_UPDATE_SCREENSHOTS !== '1')
    await rm(SHOTS, { recursive: true, force: true });
});
afterEach(closeAll);

/** A page signed in through the link the gateway prints (the token leaves the address bar). */
async function signedIn(h: ConsoleHarness): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  open.push(context);
  const page = await context.newPage();
  await page.goto(`${h.url}/login?token=${encodeURIComponent(h.token)}`);
  expect(page.url()).toBe(`${h.url}/approvals`);
  return page;
}

describe('the console in chromium', () => {
  it('an ask of a client without elicitation appears live; approving it in the page runs exactly that call once', async () => {
    const h = await harness();
    const page = await signedIn(h);
    await page.locator('p.empty').waitFor();
    const client = await gatewayClient(h.gateway, open);
    const pending = client.callTool({
      name: 'tk__note',
      arguments: { id: 'approved-in-the-browser' },
    });
    // The page polls the inbox and reloads itself when an ask arrives.
    await page.locator('article.ask').waitFor({ timeout: 20_000 });
    expect(await page.locator('pre.arguments').textContent()).toContain('approved-in-the-browser');
    await page.screenshot({ path: join(SHOTS, 'approvals.png'), fullPage: true });
    await page.getByRole('button', { name: 'Approve this call' }).click();
    await page.waitForURL(/notice=approved/);
    const result = await pending;
    expect(resultText(result)).toBe('note approved-in-the-browser');
    expect(await h.serverCalls()).toEqual([
      expect.objectContaining({ name: 'note', args: { id: 'approved-in-the-browser' } }),
    ]);
  }, 90_000);

  it('an ask denied in the page does not run', async () => {
    const h = await harness();
    const page = await signedIn(h);
    const client = await gatewayClient(h.gateway, open);
    const pending = client.callTool({ name: 'tk__note', arguments: { id: 'denied' } });
    await until(() => h.inbox.list().length > 0);
    await page.reload();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL(/notice=declined/);
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(await h.serverCalls()).toEqual([]);
  }, 90_000);

  it('a changed tool accepted in the page is offered after the reload; the audit table shows the calls', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-console-browser-'));
    open.push({ close: () => rm(folder, { recursive: true, force: true }) });
    const first = await consoleHarness({ folder });
    await first.close();
    const h = await harness({
      folder,
      env: { NOTE_DESCRIPTION: 'Reads a note by id, then sends it to backup.example.' },
      authorizer: { authorize: () => ({ verdict: 'allow' }) },
    });
    const client = await gatewayClient(h.gateway, open);
    const before = await client.listTools();
    expect(before.tools.map((tool) => tool.name)).not.toContain('tk__note');
    const page = await signedIn(h);
    await page.goto(`${h.url}/pins`);
    expect(await page.locator('pre.after').first().textContent()).toContain('backup.example');
    await page.screenshot({ path: join(SHOTS, 'pins.png'), fullPage: true });
    await page.getByRole('button', { name: 'Accept exactly this definition' }).click();
    await page.waitForURL(/notice=accepted/);
    const after = await client.listTools();
    expect(after.tools.map((tool) => tool.name)).toContain('tk__note');
    await client.callTool({ name: 'tk__note', arguments: { id: 'after-accept' } });
    await client.callTool({ name: 'tk__publish', arguments: { id: 'p1' } });
    await page.goto(`${h.url}/audit`);
    const table = await page.locator('table.audit').textContent();
    expect(table).toContain('tk__note');
    expect(table).toContain('tk__publish');
    expect(table).toContain('console-pin-accepted');
    expect(await page.locator('#chain').textContent()).toContain('intact');
    await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });
    await page.goto(`${h.url}/upstreams`);
    expect(await page.locator('table.upstreams').textContent()).toContain('ready');
    await page.screenshot({ path: join(SHOTS, 'upstreams.png'), fullPage: true });
  }, 120_000);
});
