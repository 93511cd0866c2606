import { describe, expect, it } from 'vitest';
import { inboxAsk } from '../approval-inbox.js';
import { ConsoleInbox, DEFAULT_CONSOLE_MAX_PENDING } from './console-inbox.js';
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
