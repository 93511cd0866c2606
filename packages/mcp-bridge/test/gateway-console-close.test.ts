// An ask waiting in the console inbox when the gateway closes: it is settled as declined at once
// (it leaves the inbox, a later answer finds nothing), the call never runs, the client is
// answered "not approved" before its connection closes, the audit log says so, and close() does
// not wait for the approval timeout.
import { Client as ClientV2, InMemoryTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayClient, resultText } from './helpers.js';
import {
  type ConsoleHarness,
  postForm,
  signIn,
  tracked,
  until,
} from './support/console-harness.js';

const { open, closeAll, harness } = tracked();
afterEach(closeAll);

/** How the call ended: its result, or the error it was rejected with. */
type Ended = { readonly result?: Record<string, unknown>; readonly error?: unknown };

const ending = (call: Promise<unknown>): Promise<Ended> =>
  call.then(
    (result) => ({ result: result as Record<string, unknown> }),
    (error: unknown) => ({ error }),
  );

const CLIENTS: readonly [
  string,
  (h: ConsoleHarness) => Promise<{ callTool(params: Record<string, unknown>): Promise<unknown> }>,
][] = [
  ['a 2025-11-25 client without elicitation', (h) => gatewayClient(h.gateway, open)],
  [
    'a 2026-07-28 client without elicitation',
    async (h) => {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await h.gateway.connect(serverSide);
      const client = new ClientV2(
        { name: 'modern-no-elicitation', version: '1.0.0' },
        { capabilities: {}, versionNegotiation: { mode: 'auto' as const } },
      );
      await client.connect(clientSide);
      open.push(client);
      return client;
    },
  ],
];

describe('an ask waiting in the console inbox when the gateway closes', () => {
  it.each(CLIENTS)(
    'is declined for %s: nothing runs, the client is answered, the audit says so',
    async (_label, connect) => {
      // An approval timeout far beyond the test: only the close can settle the ask.
      const h = await harness({ approvalTimeoutMs: 600_000 });
      const session = await signIn(h);
      const client = await connect(h);
      const pending = ending(client.callTool({ name: 'tk__note', arguments: { id: 'at-close' } }));
      await until(() => h.inbox.list().length > 0);
      const [ask] = h.inbox.list();
      // close() ends, and so does the call, well before the approval timeout.
      const bound = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 15_000));
      expect(await Promise.race([h.gateway.close().then(() => 'closed' as const), bound])).toBe(
        'closed',
      );
      const ended = await Promise.race([pending, bound]);
      expect(ended).not.toBe('hung');
      expect(h.inbox.list()).toEqual([]);
      // The client was answered (not left to see its connection drop): not approved.
      const { result, error } = ended as Ended;
      expect(error).toBeUndefined();
      expect(result?.isError).toBe(true);
      expect(resultText(result as Record<string, unknown>)).toMatch(/was not approved/);
      // An approval given after the close finds nothing waiting, and runs nothing.
      const late = await postForm(
        h,
        '/console/approvals/answer',
        { csrf: session.csrf, id: ask?.id ?? '', decision: 'approve' },
        { cookie: session.cookie },
      );
      expect(late.status).toBe(409);
      expect(await h.serverCalls()).toEqual([]);
      const lines = await h.auditLines();
      expect(lines.filter((line) => line.tool === 'tk__note').map((line) => line.outcome)).toEqual([
        'declined',
      ]);
    },
    60_000,
  );
});
