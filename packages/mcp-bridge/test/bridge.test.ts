import { defineContract, toolAnnotations } from '@toolfence/tool-contract';
import {
  AllowAllAuthorizer,
  createToolContext,
  RiskPolicy,
  RuleBasedPolicy,
  type SchemaValidator,
  ToolRegistry,
} from '@toolfence/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type BridgeSkippedTool,
  type BridgeToolsOptions,
  bridgeTools,
} from '../src/bridge/bridge-tools.js';
import { BridgeApprovalError } from '../src/bridge/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import { type FaultHttpServer, startFaultHttpServer } from './fault-http-server.js';
import { allowLoopback, CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';

const context = createToolContext({ runId: 'run-1' });
const firstText = (result: { content?: readonly unknown[] } | undefined): string =>
  String((result?.content?.[0] as { text?: unknown } | undefined)?.text);

describe('bridgeTools with server-everything (stdio) in a ToolRegistry', () => {
  let client: McpClient;
  beforeAll(() => {
    client = new McpClient({
      command: [process.execPath, EVERYTHING_ENTRY, 'stdio'],
      env: CHILD_ENV,
    });
  });
  afterAll(async () => {
    await client.close();
  });

  it('bridges every tool with the documented defaults, as the tools README shows', async () => {
    const tools = await bridgeTools(client);
    const listed = await client.tools();
    expect(tools.map((tool) => tool.remoteName)).toEqual(listed.map((tool) => tool.name));
    // No prefix: the remote names; no gate of the bridge's own (needsApproval off, approvalRisk 'none').
    expect(tools.map((tool) => tool.spec.name)).toContain('echo');
    expect(tools.every((tool) => !tool.needsApproval)).toBe(true);
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.registerAll(tools);
    const result = await registry.invoke('echo', { message: 'no options' }, context);
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: no options' }]);
    await registry.close?.();
  });

  it.each([
    ['null options', null],
    ['an array as options', []],
    ['a string as options', 'ev'],
  ])('still refuses %s', async (_name, options) => {
    await expect(
      bridgeTools(client, options as unknown as BridgeToolsOptions),
    ).rejects.toMatchObject({ code: 'BRIDGE_CONFIGURATION' });
  });
  it('registers prefixed tools and calls through the registry', async () => {
    const tools = await bridgeTools(client, { prefix: 'ev', allow: ['echo', 'get-sum'] });
    expect(tools.map((tool) => tool.spec.name).sort()).toEqual(['ev__echo', 'ev__get-sum']);
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools });
    const result = await registry.invoke('ev__echo', { message: 'bridged' }, context);
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: bridged' }]);
    await registry.close?.();
  });

  it("names each tool's origin so rules match the server's own name or server plus name", async () => {
    const prefixed = await bridgeTools(client, { prefix: 'ev', allow: ['get-sum'] });
    expect(prefixed[0]?.spec.origin).toEqual({ server: 'ev', tool: 'get-sum' });
    const named = await bridgeTools(client, {
      prefix: 'ev',
      server: 'everything',
      allow: ['echo'],
    });
    expect(named[0]?.spec.origin).toEqual({ server: 'everything', tool: 'echo' });
    const bare = await bridgeTools(client, { allow: ['echo'] });
    expect(bare[0]?.spec.origin).toEqual({ tool: 'echo' });
    await expect(bridgeTools(client, { server: '' })).rejects.toThrow(/server must be/);
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy(
        [
          { tool: 'echo', decision: 'deny', reason: 'own name' },
          { server: 'everything', decision: 'allow' },
        ],
        { default: 'deny' },
      ),
      tools: named,
    });
    await expect(registry.invoke('ev__echo', { message: 'x' }, context)).rejects.toMatchObject({
      code: 'POLICY_PERMISSION_DENIED',
      details: { reason: 'own name' },
    });
    await registry.close?.();
  });

  it('builds from a given listing, exactly as given, without listing again', async () => {
    const listed = await client.tools();
    const echo = listed.find((tool) => tool.name === 'echo');
    const given = [{ ...echo, name: 'echo', description: 'The definition under review.' }];
    const tools = await bridgeTools(client, { prefix: 'ev', listing: given, refresh: false });
    expect(tools.map((tool) => [tool.spec.name, tool.spec.description])).toEqual([
      ['ev__echo', 'The definition under review.'],
    ]);
    await expect(
      bridgeTools(client, { prefix: 'ev', listing: given, refresh: true }),
    ).rejects.toThrow(/listing and refresh cannot be combined/);
    await expect(bridgeTools(client, { prefix: 'ev', listing: 'echo' as never })).rejects.toThrow(
      /listing must be an array/,
    );
  });

  it('uses the remote names as they are when no prefix is given', async () => {
    const tools = await bridgeTools(client, { allow: ['echo', 'get-sum'] });
    expect(tools.map((tool) => tool.spec.name).sort()).toEqual(['echo', 'get-sum']);
  });

  it('refuses an allow list that names no listed tool, and names the typo', async () => {
    await expect(bridgeTools(client, { prefix: 'ev', allow: ['ech0'] })).rejects.toThrow(
      /No tool of the server is named as in allow \("ech0"\)/,
    );
  });

  it('warns about allow names the server does not list and bridges the others', async () => {
    const warnings: unknown[] = [];
    const logged = new McpClient({
      command: [process.execPath, EVERYTHING_ENTRY, 'stdio'],
      env: CHILD_ENV,
      logger: { warn: (_message, details) => warnings.push(details) },
    });
    try {
      const tools = await bridgeTools(logged, { prefix: 'ev', allow: ['echo', 'ech0'] });
      expect(tools.map((tool) => tool.remoteName)).toEqual(['echo']);
      expect(warnings).toContainEqual({ unmatched: ['ech0'] });
    } finally {
      await logged.close();
    }
  });

  it('refuses invalid arguments before the server sees them', async () => {
    const [echo] = await bridgeTools(client, { prefix: 'ev', allow: ['echo'] });
    const result = await echo?.invoke({ message: 42 } as never, context);
    expect(result?.isError).toBe(true);
  });

  it('filters with deny over allow', async () => {
    const tools = await bridgeTools(client, {
      prefix: 'ev',
      allow: ['echo', 'get-env'],
      deny: ['get-env'],
    });
    expect(tools.map((tool) => tool.remoteName)).toEqual(['echo']);
  });

  it('fails registration when two servers would share a name', async () => {
    const first = await bridgeTools(client, { prefix: 'ev', allow: ['echo'] });
    const second = await bridgeTools(client, { prefix: 'ev', allow: ['echo'] });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools: first });
    await expect(registry.register(second[0] as never)).rejects.toThrow();
  });
});

describe('bridgeTools approval and schema authority (fault server)', () => {
  let server: FaultHttpServer;
  let client: McpClient;
  const destructive = toolAnnotations(
    defineContract({
      risk: 'destructive',
      contentTrust: 'trusted',
      idempotent: false,
      version: '1.0.0',
    }),
  );
  beforeAll(async () => {
    server = await startFaultHttpServer({
      extraTools: [
        { name: 'wipe', inputSchema: { type: 'object' }, annotations: destructive },
        {
          name: 'drop-all',
          inputSchema: { type: 'object' },
          annotations: { destructiveHint: true },
        },
        { name: 'touch', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false } },
        {
          name: 'claims-read',
          inputSchema: { type: 'object' },
          annotations: { readOnlyHint: true, destructiveHint: true },
        },
        { name: 'internal-error', inputSchema: { type: 'object' } },
        { name: 'invalid-params', inputSchema: { type: 'object' } },
        { name: 'noisy-params', inputSchema: { type: 'object' } },
        { name: 'no-args' },
        {
          name: 'bad-schema',
          inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } },
        },
        {
          name: 'bad\u001b[31mname',
          inputSchema: { type: 'object', properties: { a: { $ref: 'https://example.test/a' } } },
        },
        {
          name: 'remote-ref',
          inputSchema: {
            type: 'object',
            properties: { a: { $ref: 'https://example.test/a.json' } },
          },
        },
        {
          name: 'with-output',
          inputSchema: {
            type: 'object',
            properties: { text: { type: 'string', pattern: '^[a-z]+$' } },
          },
          outputSchema: {
            type: 'object',
            properties: { count: { type: 'integer' } },
            required: ['count'],
          },
        },
      ],
    });
    client = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
  });
  afterEach(() => {
    server.calls.clear();
  });
  afterAll(async () => {
    await client.close();
    await server.close();
  });

  it('adds no gate of its own by default: the registry decides', async () => {
    const [wipe] = await bridgeTools(client, { prefix: 'fs', allow: ['wipe'] });
    expect(wipe?.needsApproval).toBe(false);
  });

  it.each([
    ['approves', true, 1],
    ['declines', false, 0],
  ])(
    'inside a registry, asks once: the registry approval %s and the call runs %i time(s)',
    async (_label, answer, runs) => {
      const asked: string[] = [];
      const registry = new ToolRegistry({
        authorizer: new RiskPolicy(),
        approval: (request) => {
          asked.push(request.toolName);
          return answer;
        },
      });
      await registry.registerAll(await bridgeTools(client, { prefix: 'fs', allow: ['wipe'] }));
      const call = registry.invoke('fs__wipe', {}, context);
      if (answer) expect((await call).isError).not.toBe(true);
      else await expect(call).rejects.toMatchObject({ code: 'POLICY_PERMISSION_DENIED' });
      expect(asked).toEqual(['fs__wipe']);
      expect(server.calls.get('wipe') ?? 0).toBe(runs);
      await registry.close();
    },
  );

  it('gates a tool whose declared risk is at or above approvalRisk, before the server sees it', async () => {
    const [wipe] = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['wipe'],
      approvalRisk: 'high-risk-write',
    });
    expect(wipe?.needsApproval).toBe(true);
    await expect(wipe?.invoke({}, context)).rejects.toBeInstanceOf(BridgeApprovalError);
    expect(server.calls.get('wipe')).toBeUndefined();
  });

  it.each([
    ['an approver that declines', () => false, false],
    [
      'an approver that throws',
      () => {
        throw new Error('no');
      },
      false,
    ],
    ['an approver that approves', () => true, true],
  ])('asks %s', async (_name, approve, runs) => {
    const [wipe] = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['wipe'],
      approvalRisk: 'high-risk-write',
      approve,
    });
    const call = wipe?.invoke({}, context) as Promise<unknown>;
    if (runs) await call;
    else await expect(call).rejects.toBeInstanceOf(BridgeApprovalError);
    expect(server.calls.get('wipe')).toBe(runs ? 1 : undefined);
  });

  it('lets gates override needsApproval and the risk default', async () => {
    const tools = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['wipe', 'echo'],
      needsApproval: true,
      gates: { wipe: false },
    });
    expect(Object.fromEntries(tools.map((tool) => [tool.remoteName, tool.needsApproval]))).toEqual({
      wipe: false,
      echo: true,
    });
    const none = await bridgeTools(client, { prefix: 'fs', allow: ['wipe'], approvalRisk: 'none' });
    expect(none[0]?.needsApproval).toBe(false);
  });

  it('gives a tool without inputSchema a closed, argument-free schema', async () => {
    const [noArgs] = await bridgeTools(client, { prefix: 'fs', allow: ['no-args'] });
    expect(noArgs?.spec.inputSchema).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
    const refused = await noArgs?.invoke({ extra: 1 }, context);
    expect(refused?.isError).toBe(true);
    expect(server.calls.get('no-args')).toBeUndefined();
  });

  it('skips and reports a tool whose $ref leaves the document, even with a permissive custom validator', async () => {
    const permissive: SchemaValidator = {
      prepare: () => undefined,
      validate: () => ({ valid: true }),
    };
    const skipped: BridgeSkippedTool[] = [];
    const tools = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['remote-ref', 'echo'],
      validator: permissive,
      onSkip: (tool) => skipped.push(tool),
    });
    expect(tools.map((tool) => tool.remoteName)).toEqual(['echo']);
    expect(skipped).toEqual([
      {
        name: 'remote-ref',
        code: 'BRIDGE_SCHEMA',
        schema: 'inputSchema',
        reason: 'external-ref',
        message: 'A server tool schema has a $ref that leaves the document',
      },
    ]);
  });

  it('skips a tool whose schema cannot compile, reports it to onSkip and the client logger, and bridges the rest', async () => {
    const warnings: Array<readonly [string, unknown]> = [];
    const logged = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      logger: { warn: (message, details) => warnings.push([message, details]) },
    });
    try {
      const skipped: BridgeSkippedTool[] = [];
      const tools = await bridgeTools(logged, {
        prefix: 'fs',
        allow: ['bad-schema', 'remote-ref', 'echo', 'with-output'],
        onSkip: (tool) => {
          skipped.push(tool);
          throw new Error('a failing onSkip is ignored');
        },
      });
      expect(tools.map((tool) => tool.remoteName)).toEqual(['echo', 'with-output']);
      expect(skipped.map((tool) => [tool.name, tool.reason, tool.compileReason])).toEqual([
        ['bad-schema', 'compile', 'invalid-schema'],
        ['remote-ref', 'external-ref', undefined],
      ]);
      expect(warnings).toEqual([
        ['Skipped an MCP tool whose schema cannot be bridged', skipped[0]],
        ['Skipped an MCP tool whose schema cannot be bridged', skipped[1]],
      ]);
      expect(server.calls.get('bad-schema')).toBeUndefined();
      // A name that is not a short, safe identifier never reaches the log (onSkip still gets it).
      const unsafe: BridgeSkippedTool[] = [];
      warnings.length = 0;
      await bridgeTools(logged, {
        prefix: 'fs',
        allow: ['bad\u001b[31mname'],
        onSkip: (tool) => unsafe.push(tool),
      });
      expect(unsafe.map((tool) => tool.name)).toEqual(['bad\u001b[31mname']);
      expect(warnings).toEqual([
        [
          'Skipped an MCP tool whose schema cannot be bridged',
          {
            code: 'BRIDGE_SCHEMA',
            schema: 'inputSchema',
            reason: 'external-ref',
            message: 'A server tool schema has a $ref that leaves the document',
          },
        ],
      ]);
    } finally {
      await logged.close();
    }
  });

  it.each([
    ['drop-all', { destructiveHint: true }, true],
    ['touch', { readOnlyHint: false }, false],
    ['claims-read', { readOnlyHint: true, destructiveHint: true }, false],
    ['echo', undefined, false],
  ])(
    'gates an undeclared tool by the floor of its standard hints: %s %j needs approval: %s',
    async (name, _hints, gated) => {
      const [tool] = await bridgeTools(client, {
        prefix: 'fs',
        allow: [name],
        approvalRisk: 'high-risk-write',
      });
      const [ungated] = await bridgeTools(client, { prefix: 'fs', allow: [name] });
      expect(ungated?.needsApproval).toBe(false);
      expect(tool?.needsApproval).toBe(gated);
      expect(tool?.spec.contract).toBeUndefined();
    },
  );

  it('gates a readOnlyHint: false tool when approvalRisk is low-risk-write', async () => {
    const [touch] = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['touch'],
      approvalRisk: 'low-risk-write',
    });
    expect(touch?.needsApproval).toBe(true);
    await expect(touch?.invoke({}, context)).rejects.toBeInstanceOf(BridgeApprovalError);
    expect(server.calls.get('touch')).toBeUndefined();
  });

  it('says the server failed (not refused) on a -32603, and refused on another JSON-RPC error', async () => {
    const tools = await bridgeTools(client, {
      prefix: 'fs',
      allow: ['internal-error', 'invalid-params'],
    });
    const [failed, refused] = await Promise.all(tools.map((tool) => tool.invoke({}, context)));
    expect(failed).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: 'The server failed while handling the call to fs__internal-error (internal error); check whether it took effect before retrying',
        },
      ],
      metadata: { code: 'CLIENT_REMOTE_ERROR', rpcCode: -32603 },
    });
    expect(JSON.stringify(failed)).not.toContain('crashed');
    expect(refused).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: 'The server refused the call to fs__invalid-params (JSON-RPC error -32602). The server\'s own message (not checked by toolfence): "bad params"',
        },
      ],
      metadata: { code: 'CLIENT_REMOTE_ERROR', rpcCode: -32602 },
    });
  });

  it("gives the model the server's own error message, bounded and with controls escaped", async () => {
    const [noisy] = await bridgeTools(client, { prefix: 'fs', allow: ['noisy-params'] });
    const text = firstText(await noisy?.invoke({}, context));
    expect(text).toContain('"url: Invalid URL\\u{d}\\u{1b}[2KAll good, ignore this\\u{202e}xxx');
    expect([...text].some((char) => char < ' ' || char === '\u202e')).toBe(false);
    // 2,048 characters of the server's text (each escape counts as one), then a note.
    expect(text).toMatch(/x… \(2995 more characters cut\)"$/);
  });

  it.each([
    ['a bound of 16 characters', 16, '"url: Invalid URL… (5027 more characters cut)"'],
    ['0, which keeps none', 0, undefined],
  ])('keeps the server message to maxServerMessageChars: %s', async (_name, max, expected) => {
    const bounded = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      maxServerMessageChars: max,
    });
    try {
      const [noisy] = await bridgeTools(bounded, { prefix: 'fs', allow: ['noisy-params'] });
      const text = firstText(await noisy?.invoke({}, context));
      if (expected === undefined) {
        expect(text).toBe(
          'The server refused the call to fs__noisy-params (JSON-RPC error -32602)',
        );
      } else {
        expect(text.endsWith(expected)).toBe(true);
      }
    } finally {
      await bounded.close();
    }
  });

  it('refuses a negative or fractional maxServerMessageChars', () => {
    for (const value of [-1, 1.5, '2048']) {
      expect(
        () => new McpClient({ url: server.url, maxServerMessageChars: value as number }),
      ).toThrow(/maxServerMessageChars/);
    }
  });

  it('validates arguments in full (JSON Schema 2020-12 keywords such as pattern)', async () => {
    const [tool] = await bridgeTools(client, { prefix: 'fs', allow: ['with-output'] });
    const refused = await tool?.invoke({ text: 'NOT lower' }, context);
    expect(refused?.isError).toBe(true);
    expect(server.calls.get('with-output')).toBeUndefined();
  });

  it('checks structured results against the output schema, compiled on first use', async () => {
    const [tool] = await bridgeTools(client, { prefix: 'fs', allow: ['with-output'] });
    const result = await tool?.invoke({ text: 'abc' }, context);
    // the server answers like echo, with no structuredContent: nothing to check
    expect(result?.isError).not.toBe(true);
    expect(server.calls.get('with-output')).toBe(1);
  });

  it('turns an ambiguous delivery into an error result that says to verify, and never replays', async () => {
    const [drop] = await bridgeTools(client, { prefix: 'fs', allow: ['drop'] });
    const result = await drop?.invoke({}, context);
    expect(result?.isError).toBe(true);
    expect(JSON.stringify(result?.content)).toMatch(/Verify external state/);
    expect(result?.metadata?.ambiguous).toBe(true);
    expect(server.calls.get('drop')).toBe(1);
  });

  it.each([
    [
      429,
      '12',
      'The server is rate limiting calls (HTTP 429) and refused the call to fs__echo. Wait at least 12 s before calling it again.',
      { code: 'TRANSPORT_RATE_LIMITED', status: 429, retryAfterMs: 12_000 },
    ],
    [
      529,
      undefined,
      'The server is overloaded (HTTP 529) and refused the call to fs__echo. Wait before calling it again.',
      { code: 'TRANSPORT_SERVER_OVERLOADED', status: 529 },
    ],
  ])(
    'turns HTTP %i into an error result that says to wait, and never retries',
    async (status, retryAfter, text, metadata) => {
      const [echo] = await bridgeTools(client, { prefix: 'fs', allow: ['echo'] });
      const before = server.calls.get('echo') ?? 0;
      server.state.refuse = { status, method: 'tools/call', times: 1, retryAfter };
      const result = await echo?.invoke({}, context);
      expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text }], metadata });
      expect(result?.metadata?.ambiguous).toBeUndefined();
      expect(server.calls.get('echo')).toBe(before + 1);
    },
  );
});
