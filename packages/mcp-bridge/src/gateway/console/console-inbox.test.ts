import { describe, expect, it } from 'vitest';
import { inboxAsk } from '../approval-inbox.js';
import {
  ConsoleInbox,
  DEFAULT_CONSOLE_MAX_PENDING,
  DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL,
} from './console-inbox.js';
import { approvalsPage } from './console-pages.js';

const ask = (id: string) => ({
  tool: 'tk__note',
  server: 'toolkit',
  description: 'Reads a note.',
  arguments: { id },
  reason: 'asked',
});

describe('ConsoleInbox', () => {
  it('holds at most maxPending asks waiting for an answer; one more is full at once', async () => {
    const inbox = new ConsoleInbox(2);
    const abort = new AbortController();
    const first = inbox.decide(ask('a'), abort.signal);
    const second = inbox.decide(ask('b'), abort.signal);
    expect(await inbox.decide(ask('c'), abort.signal)).toBe('full');
    // Asks the client is putting to its user do not count against the limit.
    inbox.observe(ask('d'));
    expect(inbox.list()).toHaveLength(3);
    abort.abort();
    expect(await first).toBe('declined');
    expect(await second).toBe('declined');
    expect(DEFAULT_CONSOLE_MAX_PENDING).toBe(100);
  });

  it('answers each ask once, only the ones waiting here, and changes its version each time', async () => {
    const inbox = new ConsoleInbox();
    const start = inbox.version;
    const pending = inbox.decide(ask('a'), new AbortController().signal);
    const remove = inbox.observe(ask('b'));
    const [waiting, observed] = inbox.list() as [
      ReturnType<ConsoleInbox['list']>[number],
      ReturnType<ConsoleInbox['list']>[number],
    ];
    expect(inbox.version).toBe(start + 2);
    expect(inbox.answer(observed.id, true)).toBe(false);
    expect(inbox.answer(waiting.id, true)).toBe(true);
    expect(inbox.answer(waiting.id, false)).toBe(false);
    expect(await pending).toBe('approved');
    remove();
    expect(inbox.list()).toEqual([]);
    expect(inbox.version).toBe(start + 4);
  });

  it('an ask whose signal has already aborted is declined without being listed', async () => {
    const inbox = new ConsoleInbox();
    const abort = new AbortController();
    abort.abort();
    expect(await inbox.decide(ask('a'), abort.signal)).toBe('declined');
    expect(inbox.list()).toEqual([]);
  });
});

describe('inboxAsk and the approvals page', () => {
  it.each<{ name: string; flow: unknown; shown: string }>([
    {
      name: 'a flow given as text',
      flow: 'read <untrusted> text from gh__issue',
      shown: 'read &lt;untrusted&gt; text from gh__issue',
    },
    {
      name: 'a flow given as an object',
      flow: { source: 'gh__issue', sink: '<b>gh__pr</b>' },
      shown: '&quot;sink&quot;: &quot;&lt;b&gt;gh__pr&lt;/b&gt;&quot;',
    },
  ])('shows $name escaped when the approval request carries one', ({ flow, shown }) => {
    const request = {
      toolName: 'gh__pr',
      args: { title: 'x' },
      reason: 'a sink after untrusted input',
      spec: { description: 'Opens a pull request.' },
      flow,
    } as unknown as Parameters<typeof inboxAsk>[0];
    const inbox = new ConsoleInbox();
    inbox.observe(inboxAsk(request, 'github'));
    const page = approvalsPage(inbox.list(), inbox.version, { csrf: 'c' });
    expect(page).toContain('<dt>Flow</dt>');
    expect(page).toContain(shown);
  });

  it('shows no flow when the request carries none', () => {
    const request = {
      toolName: 'gh__pr',
      args: {},
      reason: undefined,
      spec: { description: 'Opens a pull request.' },
    } as unknown as Parameters<typeof inboxAsk>[0];
    const inbox = new ConsoleInbox();
    inbox.observe(inboxAsk(request, 'github'));
    expect(approvalsPage(inbox.list(), inbox.version, { csrf: 'c' })).not.toContain('Flow');
  });
});

const ALICE = { issuer: 'https://id-a.example.com', subject: 'alice' };
const BOB = { issuer: 'https://id-a.example.com', subject: 'bob' };
const asked = (id: string, principal?: { issuer: string; subject: string }) => ({
  ...ask(id),
  ...(principal === undefined ? {} : { principal }),
});

describe("who asked (the caller's principal)", () => {
  it('inboxAsk carries the caller from the call context, and the card shows it first', () => {
    const request = {
      toolName: 'tk__wipe',
      args: { confirm: true },
      reason: 'asked',
      spec: { description: 'Wipes.' },
      context: { metadata: { principal: { ...ALICE, claims: { groups: ['eng'] } } } },
    } as unknown as Parameters<typeof inboxAsk>[0];
    const made = inboxAsk(request, 'toolkit');
    expect(made.principal).toEqual(ALICE);
    const inbox = new ConsoleInbox();
    inbox.observe(made);
    const page = approvalsPage(inbox.list(), inbox.version, { csrf: 'c' });
    expect(page).toContain(
      '<p class="caller">Asked by <strong>alice</strong> <small>(issuer https://id-a.example.com)</small></p>',
    );
    expect(page.indexOf('class="caller"')).toBeLessThan(page.indexOf('Why asked'));
  });

  it('a call without identity says so', () => {
    const inbox = new ConsoleInbox();
    inbox.observe(ask('a'));
    expect(approvalsPage(inbox.list(), inbox.version, { csrf: 'c' })).toContain(
      "Asked by <strong>the gateway's one user</strong> <small>(no identity: stdio or a shared token)</small>",
    );
  });
});

describe('every server- or client-controlled text the card shows is escaped', () => {
  const hostile = 'Safe\u202Etxt.exe\u200B \u2066x\u2069 \u{E0041}\u{E0042} <b>';
  it('description, reason, flow, tool and server names and the principal: \\u{…}, and HTML-escaped', () => {
    const inbox = new ConsoleInbox();
    inbox.observe({
      tool: `tk__${hostile}`,
      server: hostile,
      description: `line one\n${hostile}`,
      arguments: { note: hostile },
      reason: hostile,
      flow: hostile,
      principal: { issuer: `https://id.example.com/${hostile}`, subject: hostile },
    });
    const [shown] = inbox.list();
    const page = approvalsPage(inbox.list(), inbox.version, { csrf: 'c' });
    for (const char of ['\u202E', '\u200B', '\u2066', '\u2069', '\u{E0041}', '\u{E0042}']) {
      expect(page).not.toContain(char);
    }
    const escaped =
      'Safe\\u{202e}txt.exe\\u{200b} \\u{2066}x\\u{2069} \\u{e0041}\\u{e0042} &lt;b&gt;';
    // Tool, server, reason, flow, description, arguments, subject, issuer: eight times.
    expect(page.split(escaped).length - 1).toBe(8);
    // The description keeps its line break (a <pre>); the one-line texts do not get one.
    expect(page).toContain(`line one\n${escaped}`);
    // The raw values stay for the audit line (the call as it was made).
    expect(shown?.tool).toBe(`tk__${hostile}`);
  });
});

describe("one principal's share of the inbox (maxPendingPerPrincipal)", () => {
  it("beyond it that principal's new ask is refused at once (principal-full); another still waits", async () => {
    const inbox = new ConsoleInbox({ maxPending: 10, maxPendingPerPrincipal: 2 });
    const abort = new AbortController();
    const waiting = [
      inbox.decide(asked('a1', ALICE), abort.signal),
      inbox.decide(asked('a2', ALICE), abort.signal),
    ];
    expect(await inbox.decide(asked('a3', ALICE), abort.signal)).toBe('principal-full');
    // The same subject from another issuer is another principal.
    const other = inbox.decide(
      asked('x', { ...ALICE, issuer: 'https://id-b.example.com' }),
      abort.signal,
    );
    const bob = inbox.decide(asked('b1', BOB), abort.signal);
    expect(inbox.list()).toHaveLength(4);
    // Asks the client is putting to its user do not count.
    inbox.observe(asked('o', ALICE));
    abort.abort();
    for (const answer of [...waiting, other, bob]) expect(await answer).toBe('declined');
  });

  it('asks without identity share only the whole inbox (maxPending)', async () => {
    const inbox = new ConsoleInbox({ maxPending: 3, maxPendingPerPrincipal: 1 });
    const abort = new AbortController();
    const held = [0, 1, 2].map((index) => inbox.decide(ask(String(index)), abort.signal));
    expect(await inbox.decide(ask('3'), abort.signal)).toBe('full');
    abort.abort();
    await Promise.all(held);
  });

  it('defaults: 100 in all, 10 per principal; unknown options and bad values are refused', () => {
    expect(DEFAULT_CONSOLE_MAX_PENDING).toBe(100);
    expect(DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL).toBe(10);
    expect(() => new ConsoleInbox({ maxPendingPerPrincipl: 3 } as never)).toThrow(
      /maxPendingPerPrincipl/,
    );
    expect(() => new ConsoleInbox({ maxPendingPerPrincipal: 0 })).toThrow(/maxPendingPerPrincipal/);
  });
});
