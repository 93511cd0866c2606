// Legacy (2025-11-25) sessions sealed into their id: two HTTP front ends of the gateway with the
// same sealing key stand for two replicas. A session started on one is taken by the other; a
// forged, tampered, foreign-key, expired, other-principal or approval token as session id is
// answered 404 (the client starts anew), and a held session past its max age is closed.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RiskPolicy, RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveGatewayHttp } from '../src/cli/gateway-http.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { GATEWAY_SINGLE_PRINCIPAL } from '../src/gateway/identity/gateway-principal.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { ApprovalSeal } from '../src/gateway/sealed-approval.js';
import { SessionSeal } from '../src/gateway/session-seal.js';
import { modernToolCaller } from './fixtures/modern-call.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const KEY = randomBytes(32);
const LEGACY = '2025-11-25';
const STATE = {
  protocolVersion: LEGACY,
  capabilities: {},
  clientInfo: { name: 'raw-legacy', version: '1.0.0' },
};

let folder: string;
const open: { close(): Promise<void> }[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-session-seal-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/**
 * One gateway and two HTTP front ends on it with the same key (two replicas' doors); `asking`:
 * the gateway seals its approvals under that key too, and asks before `tk__publish`.
 */
async function replicas(sessionMaxAgeMs?: number, asking = false) {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        toolkit: {
          command: process.execPath,
          args: [TOOLKIT],
          env: { CALLS_FILE: join(folder, 'calls.jsonl') },
          namespace: 'tk',
        },
      },
    }),
    authorizer: asking
      ? new RuleBasedPolicy([{ tool: 'tk__publish', decision: 'ask' }], { default: 'allow' })
      : new RiskPolicy(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(asking ? { sealKeys: { current: KEY } } : {}),
  });
  open.push(gateway);
  await gateway.start();
  const door = async () => {
    const http = await serveGatewayHttp(gateway, {
      host: '127.0.0.1',
      port: 0,
      token: undefined,
      loopback: true,
      maxSessions: 8,
      sealKeys: { current: KEY },
      ...(sessionMaxAgeMs === undefined ? {} : { sessionMaxAgeMs }),
    });
    open.push(http);
    return http.url;
  };
  return [await door(), await door()] as const;
}

async function rpc(
  url: string,
  body: Record<string, unknown>,
  session?: string,
): Promise<{ status: number; session: string | null; message: Record<string, unknown> | null }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session === undefined
        ? {}
        : { 'mcp-session-id': session, 'mcp-protocol-version': LEGACY }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...body }),
  });
  const text = await response.text();
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? (text.startsWith('{') ? text : undefined);
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    message: data === undefined ? null : (JSON.parse(data) as Record<string, unknown>),
  };
}

const initialize = (url: string) =>
  rpc(url, { id: 1, method: 'initialize', params: STATE }).then((reply) => reply.session as string);
const listTools = (url: string, session: string) =>
  rpc(url, { id: 2, method: 'tools/list', params: {} }, session);

describe('legacy sessions sealed into their id', () => {
  it('takes a session started on one replica on the other, and back', async () => {
    const [a, b] = await replicas();
    const session = await initialize(a);
    expect(session).toMatch(/^tfs1\./);
    for (const url of [b, a, b]) {
      const reply = await listTools(url, session);
      expect(reply.status).toBe(200);
      const tools =
        (reply.message?.result as { tools: { name: string }[] } | undefined)?.tools ?? [];
      expect(tools.map((tool) => tool.name)).toContain('tk__note');
    }
  }, 30_000);

  it.each<[string, (session: string) => string]>([
    ['a forged id of the sealed shape', () => `tfs1.AAAAAAAAAAA.${'A'.repeat(200)}`],
    [
      'a tampered id (one sealed byte flipped)',
      (session) => {
        const [version, key, body] = session.split('.') as [string, string, string];
        const bytes = Buffer.from(body, 'base64url');
        bytes[20] = (bytes[20] as number) ^ 0x01;
        return `${version}.${key}.${bytes.toString('base64url')}`;
      },
    ],
    [
      'an id sealed under another deployment’s key',
      () =>
        new SessionSeal({ current: randomBytes(32) }, 60_000).seal(
          GATEWAY_SINGLE_PRINCIPAL,
          STATE,
        ) as string,
    ],
    [
      'an expired id',
      () =>
        new SessionSeal({ current: KEY }, 1_000, () => Date.now() - 10_000).seal(
          GATEWAY_SINGLE_PRINCIPAL,
          STATE,
        ) as string,
    ],
    [
      'an id of another principal',
      () =>
        new SessionSeal({ current: KEY }, 60_000).seal(
          'https://issuer.example|mallory',
          STATE,
        ) as string,
    ],
    [
      'an approval requestState presented as a session id',
      () =>
        new ApprovalSeal({ keys: { current: KEY }, ttlMs: 60_000 }).seal({
          principal: GATEWAY_SINGLE_PRINCIPAL,
          tool: 'tk__note',
          pin: 'sha256:x',
          argumentsDigest: 'sha256:y',
        }),
    ],
  ])(
    'answers %s with 404 on the replica that never saw it',
    async (_label, make) => {
      const [a, b] = await replicas();
      const session = await initialize(a);
      const reply = await listTools(b, make(session));
      expect(reply.status).toBe(404);
    },
    30_000,
  );

  it.each<[string, (url: string, session: string) => ReturnType<typeof rpc>]>([
    ['a listing', listTools],
    // A plain call is served on the HTTP front's fast path (issue 41): the same sealed-id check.
    [
      'a plain tools/call',
      (url, session) =>
        rpc(
          url,
          { id: 3, method: 'tools/call', params: { name: 'tk__note', arguments: { id: 'a' } } },
          session,
        ),
    ],
  ])(
    'closes a held session past its sealed max age (404), on the replica that holds it: %s',
    async (_name, send) => {
      const [a] = await replicas(1_500);
      const session = await initialize(a);
      expect((await send(a, session)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect((await send(a, session)).status).toBe(404);
    },
    30_000,
  );

  // The reverse of the row above: a session id (sealed with the very key the approvals use) is
  // not an approval. The two seals derive their own keys and carry their own version tag.
  it.each<[string, (session: string) => string, string, RegExp]>([
    [
      'a sealed session id as it was issued',
      (session) => session,
      'approval-forged',
      /not an approval this gateway issued/,
    ],
    [
      'a sealed session id relabelled with the approval version tag',
      (session) => `tfa2.${session.split('.').slice(1).join('.')}`,
      // Its key id is the session seal's, which no approval key has.
      'approval-unknown',
      /unknown to this gateway/,
    ],
  ])(
    'refuses %s presented as requestState, and the call does not run',
    async (_label, make, outcome, refusal) => {
      const [a] = await replicas(undefined, true);
      const session = await initialize(a);
      expect(session).toMatch(/^tfs1\./);
      const call = modernToolCaller(a);
      const asked = await call({ name: 'tk__publish', arguments: { id: 'x' } });
      expect(asked.result?.resultType).toBe('input_required');
      const reply = await call({
        name: 'tk__publish',
        arguments: { id: 'x' },
        inputResponses: { approval: { action: 'accept', content: { approve: true } } },
        requestState: make(session),
      });
      expect(reply.result?.isError).toBe(true);
      const text = ((reply.result?.content ?? []) as { text?: string }[])
        .map((block) => block.text ?? '')
        .join('');
      expect(text).toMatch(refusal);
      expect(text).toMatch(/did not run/);
      const calls = await readFile(join(folder, 'calls.jsonl'), 'utf8').catch(() => '');
      expect(calls).toBe('');
      const outcomes = (await readFile(join(folder, 'audit.jsonl'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { outcome: string }).outcome);
      expect(outcomes).toEqual(['asked', outcome]);
    },
    30_000,
  );
});
