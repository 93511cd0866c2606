import {
  InputRequestError,
  McpClient,
  type McpClientOptions,
  ParameterHeaderError,
  ResourceNotFoundError,
  ServerRpcError,
} from '@toolfence/mcp-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allowLoopback,
  CHILD_ENV,
  type RecordedRequest,
  startV2Http,
  V2_SERVER,
  type V2Http,
} from './helpers.js';

const b64 = (value: string): string =>
  `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

function calls(log: readonly RecordedRequest[], tool?: string): readonly RecordedRequest[] {
  return log.filter(
    (entry) =>
      entry.body?.method === 'tools/call' &&
      (tool === undefined || entry.body.params?.name === tool),
  );
}

const accept = { handler: async () => ({ action: 'accept' as const, content: { ok: true } }) };

describe('x-mcp-header and multi round-trip requests against an SDK v2 server (modern HTTP)', () => {
  let server: V2Http;
  let seen = 0;
  beforeAll(async () => {
    server = await startV2Http('http');
  });
  afterAll(async () => {
    await server.close();
  });

  async function withClient<T>(
    options: Partial<McpClientOptions>,
    run: (client: McpClient) => Promise<T>,
  ): Promise<{ result: T; log: readonly RecordedRequest[] }> {
    const client = new McpClient({ url: server.url, allowNonPublic: allowLoopback, ...options });
    try {
      const result = await run(client);
      const all = await server.log();
      const log = all.slice(seen);
      seen = all.length;
      return { result, log };
    } finally {
      await client.close();
    }
  }

  it('skips a tool whose x-mcp-header breaks the rules and reports it; the others stay callable', async () => {
    const { result } = await withClient({}, async (client) => client.listing());
    expect(result.tools.map((tool) => tool.name)).not.toContain('bad_header');
    expect(result.tools.map((tool) => tool.name)).toContain('regional');
    expect(result.problems).toEqual([
      expect.objectContaining({
        name: 'bad_header',
        reason: expect.stringMatching(/x-mcp-header/),
      }),
    ]);
  });

  it('mirrors annotated arguments into Mcp-Param-* headers with the spec encoding, omitting null', async () => {
    const { log } = await withClient({}, async (client) => {
      await client.tools();
      await client.callTool('regional', { region: ' eu-west', count: 3, note: 'x' });
      await client.callTool('regional', { region: 'plain', count: null });
    });
    const [first, second] = calls(log, 'regional');
    expect(first?.headers['mcp-param-region']).toBe(b64(' eu-west'));
    expect(first?.headers['mcp-param-count']).toBe('3');
    expect(first?.headers['mcp-param-note']).toBeUndefined();
    expect(first?.headers['mcp-name']).toBe('regional');
    expect(second?.headers['mcp-param-region']).toBe('plain');
    expect(second?.headers['mcp-param-count']).toBeUndefined();
  });

  it.each([
    ['a float for an integer', { region: 'a', count: 1.5 }],
    ['an unsafe integer', { region: 'a', count: 2 ** 60 }],
    ['a number for a string', { region: 7 }],
  ])('refuses %s before sending anything', async (_name, args) => {
    const { result, log } = await withClient({}, async (client) => {
      await client.tools();
      return client.callTool('regional', args).catch((error: unknown) => error);
    });
    expect(ParameterHeaderError.isInstance(result)).toBe(true);
    expect(calls(log)).toEqual([]);
  });

  it('answers an input_required result through the elicitation callback and repeats the call with the exact requestState under a new id', async () => {
    const asked: unknown[] = [];
    const { result, log } = await withClient(
      {
        elicitation: {
          handler: async (params) => {
            asked.push(params.message);
            return { action: 'accept', content: { ok: true } };
          },
        },
      },
      (client) => client.callTool('confirm', { action: 'deploy' }),
    );
    expect(result.content).toEqual([
      { type: 'text', text: 'confirmed {"ok":true} state state-for-deploy' },
    ]);
    expect(asked).toEqual(['Really deploy?']);
    const [first, repeat] = calls(log, 'confirm');
    expect(first?.body?.params?.inputResponses).toBeUndefined();
    expect(repeat?.body?.id).not.toBe(first?.body?.id);
    expect(repeat?.body?.params?.requestState).toBe('state-for-deploy');
    expect(repeat?.body?.params?.inputResponses).toEqual({
      confirm: { action: 'accept', content: { ok: true } },
    });
    expect(repeat?.body?.params?.arguments).toEqual({ action: 'deploy' });
    // The capability is declared because the host gave the callback.
    expect(
      first?.body?.params?._meta?.['io.modelcontextprotocol/clientCapabilities'],
    ).toMatchObject({ elicitation: {} });
  });

  it('a server that needs a capability the client did not declare refuses the call itself', async () => {
    const { result, log } = await withClient({}, (client) =>
      client.callTool('confirm', {}).catch((error: unknown) => error),
    );
    expect(ServerRpcError.isInstance(result)).toBe(true);
    expect(calls(log, 'confirm')).toHaveLength(1);
  });

  it.each([
    [
      'a declined elicitation',
      { elicitation: { handler: async () => ({ action: 'decline' as const }) } },
      'declined',
    ],
    [
      'a cancelled elicitation',
      { elicitation: { handler: async () => ({ action: 'cancel' as const }) } },
      'cancelled',
    ],
  ])(
    'ends the call with a typed error on %s, without repeating it',
    async (_name, options, reason) => {
      const { result, log } = await withClient(options, (client) =>
        client.callTool('confirm', {}).catch((error: unknown) => error),
      );
      expect(InputRequestError.isInstance(result)).toBe(true);
      expect((result as InputRequestError).reason).toBe(reason);
      expect(calls(log, 'confirm')).toHaveLength(1);
    },
  );

  it('bounds the rounds with maxInputRounds', async () => {
    const { result, log } = await withClient({ elicitation: accept, maxInputRounds: 2 }, (client) =>
      client.callTool('ask_forever', {}).catch((error: unknown) => error),
    );
    expect(InputRequestError.isInstance(result)).toBe(true);
    expect((result as InputRequestError).reason).toBe('too-many-rounds');
    expect(calls(log, 'ask_forever')).toHaveLength(3);
    const states = calls(log, 'ask_forever').map((entry) => entry.body?.params?.requestState);
    expect(new Set(states).size).toBe(3);
  });

  // Issue 35 item 12: 32 input requests a round for 8 rounds would prompt the user 256 times;
  // one call's prompts are bounded in total (maxInputPrompts, default 32).
  it.each([
    ['the default (32)', {}, 32, 2],
    ['maxInputPrompts: 64', { maxInputPrompts: 64 }, 64, 3],
    ['maxInputPrompts: 10 (less than one round)', { maxInputPrompts: 10 }, 0, 1],
  ])('bounds the prompts of one call over its rounds: %s', async (_name, options, asked, sent) => {
    let prompts = 0;
    const counting = {
      handler: async () => {
        prompts += 1;
        return { action: 'accept' as const, content: { ok: true } };
      },
    };
    const { result, log } = await withClient({ elicitation: counting, ...options }, (client) =>
      client.callTool('ask_forever', { count: 32 }).catch((error: unknown) => error),
    );
    expect(InputRequestError.isInstance(result)).toBe(true);
    expect(result).toMatchObject({ reason: 'too-many-prompts' });
    expect(prompts).toBe(asked);
    expect(calls(log, 'ask_forever')).toHaveLength(sent);
  });

  it('refuses an invalid maxInputRounds', () => {
    expect(
      () => new McpClient({ url: server.url, allowNonPublic: allowLoopback, maxInputRounds: 0 }),
    ).toThrow(/maxInputRounds/);
    expect(
      () => new McpClient({ url: server.url, allowNonPublic: allowLoopback, maxInputPrompts: 0 }),
    ).toThrow(/maxInputPrompts/);
  });
});

describe('the same elicitation callback in legacy mode and over stdio', () => {
  let legacy: V2Http;
  beforeAll(async () => {
    legacy = await startV2Http('http-legacy');
  });
  afterAll(async () => {
    await legacy.close();
  });

  it('a legacy server’s elicitation/create reaches the callback', async () => {
    const asked: unknown[] = [];
    const client = new McpClient({
      url: legacy.url,
      allowNonPublic: allowLoopback,
      elicitation: {
        handler: async (params) => {
          asked.push(params.message);
          return { action: 'accept', content: { ok: true } };
        },
      },
    });
    try {
      const result = await client.callTool('confirm', { action: 'ship' });
      expect(client.protocolVersion).toBe('2025-11-25');
      expect(asked).toEqual(['Really ship?']);
      expect(result.content).toEqual([
        { type: 'text', text: 'confirmed {"ok":true} state state-for-ship' },
      ]);
      const initialize = (await legacy.log()).find((entry) => entry.body?.method === 'initialize');
      expect(initialize?.body?.params?.capabilities).toMatchObject({ elicitation: {} });
    } finally {
      await client.close();
    }
  });

  it('declares no capability when the host gives no callback', async () => {
    const client = new McpClient({ url: legacy.url, allowNonPublic: allowLoopback });
    try {
      await client.connect();
      const initialize = (await legacy.log())
        .filter((entry) => entry.body?.method === 'initialize')
        .at(-1);
      expect(initialize?.body?.params?.capabilities).toEqual({});
    } finally {
      await client.close();
    }
  });

  it('modern stdio: answers input_required and keeps the tool with an HTTP-only header problem', async () => {
    const client = new McpClient({
      command: [process.execPath, V2_SERVER, 'stdio'],
      env: CHILD_ENV,
      elicitation: accept,
    });
    try {
      const result = await client.callTool('confirm', { action: 'run' });
      expect(client.protocolVersion).toBe('2026-07-28');
      expect(result.content).toEqual([
        { type: 'text', text: 'confirmed {"ok":true} state state-for-run' },
      ]);
      expect((await client.tools()).map((tool) => tool.name)).toContain('bad_header');
    } finally {
      await client.close();
    }
  });
});

describe('resources/read and resource-not-found (SEP-2164)', () => {
  it.each([
    ['modern', 'http'],
    ['legacy', 'http-legacy'],
  ] as const)('reads a resource and types a missing one (%s)', async (_era, mode) => {
    const server = await startV2Http(mode);
    const client = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      expect(await client.readResource('test://readme')).toEqual([
        { uri: 'test://readme', mimeType: 'text/plain', text: 'hello resource' },
      ]);
      const error = await client.readResource('test://missing').catch((caught: unknown) => caught);
      expect(ResourceNotFoundError.isInstance(error)).toBe(true);
      expect((error as ResourceNotFoundError).uri).toBe('test://missing');
      expect((error as Error).message).not.toContain('missing');
      const read = (await server.log()).find((entry) => entry.body?.method === 'resources/read');
      if (mode === 'http') expect(read?.headers['mcp-name']).toBe('test://readme');
    } finally {
      await client.close();
      await server.close();
    }
  });
});
