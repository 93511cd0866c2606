// The flow guard's labels of a sealed legacy (2025-11-25) HTTP session survive what the session
// survives. With a sealing key a session's id is its state, so the gateway resumes it after an
// idle close; it must not resume it with clean labels. The toxic flow's three servers are allowed
// by the policy; a raw client reads the injected issue and the private file, is denied the
// publish, and then tries again with the same Mcp-Session-Id: after the session idled out (still
// denied: the labels continue), after DELETE (404: a deleted id is not resumed), and on a fresh
// gateway process that never held the session (judged as a session whose labels were dropped).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type GatewayHttpOptions, serveGatewayHttp } from '../src/cli/gateway-http.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { parseInspectPolicy } from '../src/gateway/policy-file.js';
import { sealedFlowSession } from '../src/gateway/session-seal.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.mjs`, import.meta.url));
const PRIVATE_TEXT = 'PRIVATE ROADMAP: acquire competitor in Q3; codename BLUEFIN.';
const LEGACY = '2025-11-25';
const KEY = randomBytes(32);

let folder: string;
let publishedFile: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-sealed-flow-'));
  publishedFile = join(folder, 'published.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/**
 * A gateway (its own process state: its own flow guard) over the three servers, every tool
 * allowed, served over HTTP with the shared sealing key; `name` keeps each one's files apart.
 */
async function door(name: string, options: Partial<GatewayHttpOptions> = {}): Promise<string> {
  return (await gatewayDoor(name, options)).url;
}

async function gatewayDoor(name: string, options: Partial<GatewayHttpOptions> = {}) {
  const policy = parseInspectPolicy({
    kind: 'rules',
    rules: [
      { server: 'tracker', decision: 'allow' },
      { server: 'repo', decision: 'allow' },
      { server: 'publisher', decision: 'allow' },
    ],
  });
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        tracker: { command: process.execPath, args: [fixture('flow-tracker-server')] },
        repo: { command: process.execPath, args: [fixture('flow-repo-server')] },
        publisher: {
          command: process.execPath,
          args: [fixture('flow-publisher-server')],
          env: { PUBLISHED_FILE: publishedFile },
        },
      },
    }),
    authorizer: policy.authorizer,
    pins: await PinStore.open(join(folder, `${name}.lock.json`)),
    audit: new AuditLog(join(folder, `${name}.audit.jsonl`), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  const http = await serveGatewayHttp(gateway, {
    host: '127.0.0.1',
    port: 0,
    token: undefined,
    loopback: true,
    maxSessions: 8,
    sealKeys: { current: KEY },
    sessionIdleMs: 1_000,
    ...options,
  });
  open.push(http);
  return { url: http.url, gateway };
}

interface Reply {
  readonly status: number;
  readonly session: string | null;
  readonly message: Record<string, unknown> | undefined;
}

let nextId = 1;
async function rpc(
  url: string,
  body: Record<string, unknown>,
  session?: string,
  method = 'POST',
): Promise<Reply> {
  const response = await fetch(url, {
    method,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session === undefined
        ? {}
        : { 'mcp-session-id': session, 'mcp-protocol-version': LEGACY }),
    },
    ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', ...body }) } : {}),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : /^data: (.*)$/m.exec(text)?.[1];
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    message: data === undefined ? undefined : (JSON.parse(data) as Record<string, unknown>),
  };
}

async function initialize(url: string): Promise<string> {
  const reply = await rpc(url, {
    id: nextId++,
    method: 'initialize',
    params: {
      protocolVersion: LEGACY,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    },
  });
  const session = reply.session as string;
  expect(session).toMatch(/^tfs1\./);
  expect((await rpc(url, { method: 'notifications/initialized' }, session)).status).toBe(202);
  return session;
}

/** Calls `name`; resolves to the reply, its result's text, and whether it is an error result. */
async function call(url: string, session: string, name: string, args: Record<string, unknown>) {
  const reply = await rpc(
    url,
    { id: nextId++, method: 'tools/call', params: { name, arguments: args } },
    session,
  );
  const result = reply.message?.result as
    | { content?: { text?: string }[]; isError?: boolean }
    | undefined;
  return {
    status: reply.status,
    text: (result?.content ?? []).map((block) => block.text ?? '').join(''),
    isError: result?.isError === true,
  };
}

/** The toxic flow's reads: the injected issue (untrusted) and the private file (sensitive). */
async function readBoth(url: string, session: string): Promise<void> {
  expect((await call(url, session, 'tracker__get_issue', { number: 7 })).isError).toBe(false);
  const file = await call(url, session, 'repo__read_file', { path: 'secrets/roadmap.md' });
  expect(file.text).toBe(PRIVATE_TEXT);
}

const publish = (url: string, session: string) =>
  call(url, session, 'publisher__publish', { text: PRIVATE_TEXT });

async function published(): Promise<string[]> {
  const lines = (await readFile(publishedFile, 'utf8').catch(() => '')).split('\n');
  return lines.filter(Boolean);
}

/** Waits past the idle limit and the sweep (every second), so the session is closed. */
const idleOut = () => new Promise((resolve) => setTimeout(resolve, 2_600));

describe('a sealed legacy session keeps its flow labels', () => {
  it('resumed after it idled out: the publish is still denied', async () => {
    const url = await door('a');
    const session = await initialize(url);
    await readBoth(url, session);
    const first = await publish(url, session);
    expect(first.isError).toBe(true);
    expect(first.text).toMatch(/denied/i);
    await idleOut();
    const again = await publish(url, session);
    expect(again.status).toBe(200);
    expect(again.isError).toBe(true);
    expect(again.text).toMatch(/denied/i);
    expect(await published()).toEqual([]);
  }, 60_000);

  it('resumed on the same process, a session continues its own labels (private only: the publish runs)', async () => {
    const url = await door('a');
    const session = await initialize(url);
    // Private data alone (nothing untrusted read): a publish is not raised.
    const file = await call(url, session, 'repo__read_file', { path: 'secrets/roadmap.md' });
    expect(file.text).toBe(PRIVATE_TEXT);
    await idleOut();
    const resumed = await publish(url, session);
    expect(resumed.isError).toBe(false);
    expect(await published()).toHaveLength(1);
  }, 60_000);

  it('deleted: its id is not resumed (404), and the publish never runs', async () => {
    const url = await door('a');
    const session = await initialize(url);
    await readBoth(url, session);
    expect((await publish(url, session)).isError).toBe(true);
    expect((await rpc(url, {}, session, 'DELETE')).status).toBe(200);
    const reused = await publish(url, session);
    expect(reused.status).toBe(404);
    await idleOut();
    expect((await publish(url, session)).status).toBe(404);
    expect(await published()).toEqual([]);
  }, 60_000);

  it('resumed on a fresh process that never held it: judged as dropped (exposed and private), the publish is denied', async () => {
    const first = await door('a');
    const fresh = await door('b');
    const session = await initialize(first);
    await readBoth(first, session);
    const moved = await publish(fresh, session);
    expect(moved.status).toBe(200);
    expect(moved.isError).toBe(true);
    expect(moved.text).toMatch(/dropped/);
    // A session that was clean there is judged the same way: this process cannot know.
    const clean = await initialize(first);
    expect((await publish(fresh, clean)).isError).toBe(true);
    expect(await published()).toEqual([]);
  }, 60_000);

  it('its labels end at its max age (httpSessionMaxAgeMs), not at an idle close', async () => {
    const { url, gateway } = await gatewayDoor('a', { sessionMaxAgeMs: 4_000 });
    const session = await initialize(url);
    await readBoth(url, session);
    const flow = sealedFlowSession(session);
    await idleOut();
    expect(gateway.flowLabels(flow).privateFrom.map((source) => source.tool)).toEqual([
      'repo__read_file',
    ]);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(gateway.flowLabels(flow)).toEqual({ exposedBy: [], privateFrom: [] });
    expect((await publish(url, session)).status).toBe(404);
  }, 60_000);

  it('remembers httpMaxRememberedSessions ids: a forgotten one resumes as dropped', async () => {
    const url = await door('a', { maxRememberedSessions: 1 });
    const forgotten = await initialize(url);
    await initialize(url);
    await idleOut();
    // Clean, but no longer remembered here: judged as dropped.
    const resumed = await publish(url, forgotten);
    expect(resumed.isError).toBe(true);
    expect(resumed.text).toMatch(/dropped/);
    expect(await published()).toEqual([]);
  }, 60_000);

  it('remembers httpMaxRememberedSessions deleted ids: a forgotten one resumes, judged as dropped', async () => {
    const url = await door('a', { maxRememberedSessions: 1 });
    const first = await initialize(url);
    const second = await initialize(url);
    for (const session of [first, second]) {
      expect((await rpc(url, {}, session, 'DELETE')).status).toBe(200);
    }
    // The second is still refused; the first was forgotten to make room for it.
    expect((await publish(url, second)).status).toBe(404);
    const resumed = await publish(url, first);
    expect(resumed.status).toBe(200);
    expect(resumed.isError).toBe(true);
    expect(resumed.text).toMatch(/not held by this process/);
    expect(await published()).toEqual([]);
  }, 60_000);
});
