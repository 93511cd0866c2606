import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client as ClientV2,
  InMemoryTransport as InMemoryV2,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { AllowAllAuthorizer, RiskPolicy } from '@toolfence/tools';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { GatewayTracer } from '../src/gateway/gateway-tracing.js';
import { checkHttpAuthSettings } from '../src/gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../src/gateway/identity/resource-server.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { sendJson, startScriptedOAuthServer } from './fixtures/oauth-scripted.js';
import { gatewayClient } from './helpers.js';
import { serveLoopbackHttp } from './support/loopback-gateway-http.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
const TRACKER = fileURLToPath(new URL('./fixtures/flow-tracker-server.mjs', import.meta.url));
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

let folder: string;
const open: { close(): Promise<void> }[] = [];
beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(async () => {
  trace.disable();
  propagation.disable();
  await provider.shutdown();
});
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-trace-'));
  exporter.reset();
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function gatewayAndClient(tracing?: boolean) {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
    }),
    authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(tracing === undefined ? {} : { tracing }),
  });
  open.push(gateway);
  await gateway.start();
  const client = await gatewayClient(gateway, open);
  return client;
}

/** A gateway allowing every call, in front of one stdio server, and a client of it. */
async function allowAllGatewayClient(name: string, args: string[], tracing?: boolean) {
  const gateway = new McpGateway({
    config: parseGatewayConfig({ mcpServers: { [name]: { command: process.execPath, args } } }),
    authorizer: new AllowAllAuthorizer(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(tracing === undefined ? {} : { tracing }),
  });
  open.push(gateway);
  await gateway.start();
  return gatewayClient(gateway, open);
}

/** A gateway in front of an SDK v2 server whose `whoami` answers the `_meta` it received. */
function v2GatewayClient(tracing?: boolean) {
  return allowAllGatewayClient('v2', [V2_SERVER, 'stdio'], tracing);
}

describe('gateway tracing (OpenTelemetry, MCP semantic conventions)', () => {
  it('records a tools/call SERVER span under the caller’s traceparent, and a CLIENT span upstream', async () => {
    const client = await gatewayAndClient();
    await client.callTool({
      name: 'tk__note',
      arguments: { id: 'a' },
      _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    const spans = exporter.getFinishedSpans();
    const server = spans.find((span) => span.name === 'tools/call tk__note');
    const upstream = spans.find((span) => span.name === 'tools/call note');
    expect(server?.kind).toBe(SpanKind.SERVER);
    expect(server?.spanContext().traceId).toBe(TRACE_ID);
    expect(server?.parentSpanContext?.spanId).toBe(PARENT_ID);
    expect(server?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'tk__note',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.version': LATEST_PROTOCOL_VERSION,
      'toolfence.decision': 'allow',
      'toolfence.outcome': 'ok',
      'toolfence.upstream': 'toolkit',
    });
    expect(server?.attributes['error.type']).toBeUndefined();
    expect(upstream?.kind).toBe(SpanKind.CLIENT);
    expect(upstream?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(upstream?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'note',
      'gen_ai.operation.name': 'execute_tool',
    });
  }, 30_000);

  it('marks a denied call with error.type and sends nothing upstream', async () => {
    const client = await gatewayAndClient();
    await client.callTool({ name: 'tk__wipe', arguments: { confirm: true } });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual(['tools/call tk__wipe']);
    expect(spans[0]?.attributes).toMatchObject({
      'error.type': 'POLICY_PERMISSION_DENIED',
      'toolfence.outcome': 'denied',
    });
    expect(spans[0]?.status.code).toBe(2);
  }, 30_000);

  it('starts a new trace without a traceparent, and ignores a malformed one', async () => {
    const client = await gatewayAndClient();
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await client.callTool({
      name: 'tk__note',
      arguments: { id: 'b' },
      _meta: { traceparent: 'not-a-traceparent' },
    });
    const servers = exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER);
    expect(servers).toHaveLength(2);
    for (const span of servers) expect(span.parentSpanContext).toBeUndefined();
  }, 30_000);

  it('emits nothing with tracing: false, or when @opentelemetry/api cannot be loaded', async () => {
    const client = await gatewayAndClient(false);
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    expect(exporter.getFinishedSpans()).toEqual([]);
    const absent = await GatewayTracer.load(true, '0.0.0', '@opentelemetry/not-installed');
    expect(absent.enabled).toBe(false);
    const span = absent.serverCall('x', { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` }, {});
    span.end('boom');
    expect(absent.traceContext(span)).toEqual({});
    expect(exporter.getFinishedSpans()).toEqual([]);
  }, 30_000);

  it('carries the upstream span’s traceparent in params._meta to the upstream server', async () => {
    const client = await v2GatewayClient();
    const result = await client.callTool({
      name: 'v2__whoami',
      arguments: {},
      _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, tracestate: 'vendor=1' },
    });
    const seen = JSON.parse((result.content as { text: string }[])[0]?.text as string) as Record<
      string,
      unknown
    >;
    const upstream = exporter
      .getFinishedSpans()
      .find((span) => span.kind === SpanKind.CLIENT && span.name === 'tools/call whoami');
    expect(upstream?.spanContext().traceId).toBe(TRACE_ID);
    expect(seen.traceparent).toBe(`00-${TRACE_ID}-${upstream?.spanContext().spanId}-01`);
    expect(seen.tracestate).toBe('vendor=1');
  }, 30_000);

  it('sends no trace context upstream when tracing is off', async () => {
    const client = await v2GatewayClient(false);
    const result = await client.callTool({
      name: 'v2__whoami',
      arguments: {},
      _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    const seen = (result.content as { text: string }[])[0]?.text as string;
    expect(seen).not.toContain('traceparent');
  }, 30_000);

  it('ends the CLIENT span with tool_error for an isError result', async () => {
    const client = await allowAllGatewayClient('tracker', [TRACKER]);
    const missing = await client.callTool({
      name: 'tracker__get_issue',
      arguments: { number: 404 },
      _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    expect(missing.isError).toBe(true);
    const span = exporter.getFinishedSpans().find((each) => each.name === 'tools/call get_issue');
    expect(span?.kind).toBe(SpanKind.CLIENT);
    expect(span?.attributes['error.type']).toBe('tool_error');
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  }, 30_000);

  it('ends the CLIENT span with the error code when the upstream call rejects (cancelled while it waited for a slot)', async () => {
    // The upstream client runs 8 requests at a time (McpClient's maxConcurrentRequests): a ninth
    // waits for a slot, and cancelling it there ends it before it was sent.
    const client = await gatewayAndClient();
    const busy = Array.from({ length: 8 }, (_, n) =>
      client.callTool({ name: 'tk__slow', arguments: { ms: 1_500, n } }),
    );
    const cancel = new AbortController();
    const waiting = client.callTool(
      {
        name: 'tk__slow',
        arguments: { ms: 1_500, n: 8 },
        _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      },
      undefined,
      { signal: cancel.signal },
    );
    setTimeout(() => cancel.abort(new Error('the user cancelled')), 300);
    await expect(waiting).rejects.toThrow();
    await Promise.all(busy);
    // The cancelled call's CLIENT span (the only one in the caller's trace), ended by the throw.
    const traced = exporter
      .getFinishedSpans()
      .filter((each) => each.kind === SpanKind.CLIENT && each.spanContext().traceId === TRACE_ID);
    expect(traced).toHaveLength(1);
    const span = traced[0];
    expect(span?.name).toBe('tools/call slow');
    expect(span?.attributes['error.type']).toBe('GATEWAY_CALL_FAILED');
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  }, 30_000);

  it('records mcp.protocol.version 2026-07-28 for a modern client', async () => {
    const gateway = new McpGateway({
      config: parseGatewayConfig({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      }),
      authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    });
    open.push(gateway);
    await gateway.start();
    const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new ClientV2(
      { name: 'trace-modern', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(clientSide);
    open.push(client);
    await client.callTool({
      name: 'tk__note',
      arguments: { id: 'm' },
      _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    const server = exporter.getFinishedSpans().find((span) => span.name === 'tools/call tk__note');
    expect(server?.attributes['mcp.protocol.version']).toBe('2026-07-28');
    expect(server?.parentSpanContext?.spanId).toBe(PARENT_ID);
  }, 30_000);
});

describe('gateway tracing with a caller identity (gateway.httpAuth)', () => {
  it('puts the principal (subject and issuer) on the SERVER span, never the token', async () => {
    const as = await startScriptedOAuthServer();
    open.push(as);
    const keys = await generateKeyPair('ES256', { extractable: true });
    as.metadata.jwks_uri = `${as.origin}/jwks`;
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256' };
    as.routes.set('GET /jwks', (_request, response) => sendJson(response, 200, { keys: [jwk] }));
    const gateway = new McpGateway({
      config: parseGatewayConfig({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      }),
      authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    });
    open.push(gateway);
    await gateway.start();
    const resource = 'https://gateway.example.com/mcp';
    const http = await serveLoopbackHttp(gateway, open, {
      auth: new GatewayResourceServer({
        settings: checkHttpAuthSettings({ resource, authorizationServers: [as.issuer] }),
        allowNonPublic: (_target, address) => address.address === '127.0.0.1',
      }),
    });
    const token = await new SignJWT({ scope: 'mcp:tools' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(as.issuer)
      .setAudience(resource)
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(keys.privateKey);
    const client = new ClientV2(
      { name: 'trace-client', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' as const } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(http.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    open.push(client);
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    const server = exporter.getFinishedSpans().find((span) => span.name === 'tools/call tk__note');
    expect(server?.attributes).toMatchObject({
      'enduser.id': 'alice',
      'toolfence.principal.issuer': as.issuer,
    });
    expect(
      JSON.stringify(exporter.getFinishedSpans().map((span) => span.attributes)),
    ).not.toContain(token.split('.')[2] as string);
  }, 30_000);
});
