// An ask waiting in the console inbox when the gateway closes: it is settled as declined at once
// (it leaves the inbox, a later answer finds nothing), the call never runs, the client is
// answered "not approved" before its connection closes, the audit log says so, and close() does
// not wait for the approval timeout.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startServeHttp } from './fixtures/serve-http.js';
import { stopProcess } from './fixtures/teardown.js';
import { gatewayClient, resultText } from './helpers.js';
import {
  type ConsoleHarness,
  modernClientWithoutElicitation,
  postForm,
  rawRequest,
  signIn,
  TOOLKIT,
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
  ['a 2026-07-28 client without elicitation', (h) => modernClientWithoutElicitation(h, open)],
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

describe('toolfence-mcp serve --http --console stopped (SIGTERM) while an ask waits', () => {
  let folder: string;
  let child: ChildProcess | undefined;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'toolfence-console-stop-'));
  });
  afterEach(async () => {
    // The gateway has exited before its folder goes: one still shutting down writes into it.
    if (child !== undefined) await stopProcess(child);
    child = undefined;
    await rm(folder, { recursive: true, force: true });
  });

  it('declines it: nothing runs, the client is answered, the audit says so, the process exits', async () => {
    const config = join(folder, 'toolfence.json');
    const policy = join(folder, 'policy.json');
    await writeFile(
      policy,
      JSON.stringify({
        kind: 'rules',
        rules: [{ tool: 'tk__note', decision: 'ask' }],
        default: 'allow',
      }),
    );
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          toolkit: {
            command: process.execPath,
            args: [TOOLKIT],
            env: { CALLS_FILE: join(folder, 'calls.jsonl') },
            namespace: 'tk',
          },
        },
        gateway: { audit: 'audit.jsonl', approvalTimeoutMs: 600_000 },
      }),
    );
    const served = await startServeHttp(
      ['--config', config, '--policy', policy, '--http', '127.0.0.1:0', '--console'],
      {
        cwd: folder,
        // Its console link (a whole line) and its upstream's start, in either order.
        until:
          /^(?=[\s\S]*console: http:\/\/127\.0\.0\.1:\d+\/console\/login\?token=[\w-]+\s)(?=[\s\S]*toolkit: (ready|failed))/,
      },
    );
    const spawned = served.child;
    child = spawned;
    const exited = once(spawned, 'exit');
    const { url } = served;
    const link = /console: (http:\/\/127\.0\.0\.1:\d+\/console)\/login\?token=([\w-]+)/.exec(
      served.stderr(),
    );
    expect(link).not.toBeNull();
    const consoleBase = link?.[1] as string;
    const token = link?.[2] as string;
    const login = await rawRequest(`${consoleBase}/login?token=${token}`);
    const cookie = String(login.headers['set-cookie']).split(';')[0] as string;
    const client = new ClientV1({ name: 'no-elicitation', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new TransportV1(new URL(url)));
    const pending = ending(client.callTool({ name: 'tk__note', arguments: { id: 'at-stop' } }));
    await until(async () =>
      (await rawRequest(`${consoleBase}/approvals`, { headers: { cookie } })).body.includes(
        'at-stop',
      ),
    );
    spawned.kill('SIGTERM');
    const bound = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000));
    expect(await Promise.race([exited.then(() => 'exited'), bound])).toBe('exited');
    const ended = await Promise.race([pending, bound]);
    expect(ended).not.toBe('hung');
    const { result, error } = ended as Ended;
    expect(error).toBeUndefined();
    expect(resultText(result as Record<string, unknown>)).toMatch(/was not approved/);
    await client.close().catch(() => undefined);
    expect(await readFile(join(folder, 'calls.jsonl'), 'utf8').catch(() => '')).toBe('');
    const lines = (await readFile(join(folder, 'audit.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { tool?: string; outcome?: string });
    expect(lines.filter((line) => line.tool === 'tk__note').map((line) => line.outcome)).toEqual([
      'declined',
    ]);
  }, 90_000);
});
