import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AllowAllAuthorizer, createToolContext, ToolRegistry } from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BridgeCallOptions,
  type BridgeClient,
  bridgeTools,
} from '../src/bridge/bridge-tools.js';
import { BridgeConfigurationError } from '../src/bridge/errors.js';
import { RequestNotSentError } from '../src/transport/errors.js';
import { CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';

const context = createToolContext({ runId: 'plain-client' });

describe('bridgeTools with any { tools, callTool } client', () => {
  // A client of the host's own, over the MCP SDK's Client: not an McpClient at all.
  let sdk: Client;
  let plain: BridgeClient;
  const sent: string[] = [];
  beforeAll(async () => {
    sdk = new Client({ name: 'plain-host', version: '1.0.0' });
    await sdk.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [EVERYTHING_ENTRY, 'stdio'],
        env: { ...CHILD_ENV },
        stderr: 'ignore',
      }),
    );
    plain = {
      async tools() {
        return (await sdk.listTools()).tools;
      },
      async callTool(
        name: string,
        args: Readonly<Record<string, unknown>>,
        options: BridgeCallOptions,
      ) {
        options.onSend();
        sent.push(name);
        return sdk.callTool({ name, arguments: { ...args } }, undefined, {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
      },
    };
  });
  afterAll(async () => {
    await sdk.close();
  });

  it('lists and calls through a plain object with tools() and callTool()', async () => {
    const tools = await bridgeTools(plain, { prefix: 'sdk', allow: ['echo', 'get-sum'] });
    expect(tools.map((tool) => tool.spec.name).sort()).toEqual(['sdk__echo', 'sdk__get-sum']);
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools });
    const result = await registry.invoke('sdk__get-sum', { a: 2, b: 3 }, context);
    expect(JSON.stringify(result.content)).toContain('5');
    // Invalid arguments are refused by the bridged tool before the plain client is asked.
    const before = sent.length;
    const echo = tools.find((tool) => tool.remoteName === 'echo');
    const refused = await echo?.invoke({ message: 7 } as never, context);
    expect(refused?.isError).toBe(true);
    expect(sent.length).toBe(before);
    await registry.close?.();
  });

  // A listing's input schemas are checked against the precompiled 2020-12 meta-schema (and any
  // that could fail ajv's compile beyond it are compiled) when they are listed; a plain one is
  // compiled on its first call. A bad schema is still refused at listing, with the same report.
  it.each([
    ['an unknown type name', { a: { type: 'strin' } }, 'invalid-schema'],
    ['a negative minLength', { a: { type: 'string', minLength: -1 } }, 'invalid-schema'],
    ['array-form items', { a: { type: 'array', items: [{ type: 'string' }] } }, 'invalid-schema'],
    [
      'a wrong type deep inside',
      { a: { properties: { b: { properties: { c: { type: 7 } } } } } },
      'invalid-schema',
    ],
    ['an empty enum (refused by the compile only)', { a: { enum: [] } }, 'invalid-schema'],
    ['nullable without type (the compile only)', { a: { nullable: true } }, 'invalid-schema'],
    [
      'a pattern invalid with the u flag (the compile only)',
      { a: { type: 'string', pattern: '\\-(' } },
      'invalid-schema',
    ],
    [
      'an unresolved local $ref (the compile only)',
      { a: { $ref: '#/$defs/missing' } },
      'unresolved-ref',
    ],
  ])(
    'refuses at listing a tool whose input schema has %s',
    async (_name, properties, compileReason) => {
      const skipped: unknown[] = [];
      const [echo] = (await plain.tools()).filter((tool) => tool.name === 'echo');
      const tools = await bridgeTools(plain, {
        listing: [echo as never, { name: 'bad', inputSchema: { type: 'object', properties } }],
        onSkip: (tool) => skipped.push(tool),
      });
      expect(tools.map((tool) => tool.remoteName)).toEqual(['echo']);
      expect(skipped).toEqual([
        {
          name: 'bad',
          code: 'BRIDGE_SCHEMA',
          schema: 'inputSchema',
          reason: 'compile',
          compileReason,
          message: 'The inputSchema of a server tool cannot be compiled',
        },
      ]);
    },
  );

  it('validates the first call of a tool whose schema compiles on first use, before the client is asked', async () => {
    const listing = [
      {
        name: 'echo',
        inputSchema: {
          type: 'object',
          properties: { message: { type: 'string', minLength: 2 } },
          required: ['message'],
        },
      },
    ];
    const [echo] = await bridgeTools(plain, { listing });
    const before = sent.length;
    const refused = await echo?.invoke({ message: 'x' }, context);
    expect(refused?.isError).toBe(true);
    expect(refused?.metadata).toMatchObject({ code: 'BRIDGE_INVALID_ARGUMENTS' });
    expect(sent.length).toBe(before);
    const answered = await echo?.invoke({ message: 'xy' }, context);
    expect(answered?.isError).not.toBe(true);
    expect(sent.length).toBe(before + 1);
  });

  it("passes a plain client's own error on unchanged, never claiming the call was not sent", async () => {
    const failure = new Error('the host client failed');
    const silent: BridgeClient = {
      tools: () => plain.tools(),
      // Never calls onSend: the bridge cannot know whether the request left.
      callTool: async () => {
        throw failure;
      },
    };
    const [echo] = await bridgeTools(silent, { allow: ['echo'] });
    const error = await echo?.invoke({ message: 'x' }, context).catch((caught: unknown) => caught);
    expect(error).toBe(failure);
    expect(error).not.toBeInstanceOf(RequestNotSentError);
  });

  it.each([
    ['an object without callTool', { tools: async () => [] }],
    ['an object without tools', { callTool: async () => ({}) }],
    ['null', null],
    ['a function', () => undefined],
  ])('refuses %s as the client, naming what is needed', async (_name, client) => {
    const error = await bridgeTools(client as unknown as BridgeClient).catch(
      (caught: unknown) => caught,
    );
    expect(BridgeConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/tools\(\) and callTool\(\)/);
  });

  it.each([
    ['a listing that is not an array', { tools: [] }, /must be an array of tools/],
    [
      'an entry that is not an object',
      ['echo'],
      /Listing entry 0 is not a tool: tool is not an object/,
    ],
    ['an entry without a name', [{ description: 'x' }], /Listing entry 0 is not a tool: tool name/],
    [
      'an entry with a string inputSchema',
      [{ name: 'ok' }, { name: 'x', inputSchema: 'object' }],
      /Listing entry 1 is not a tool: tool inputSchema is not an object/,
    ],
  ])("refuses a plain client's malformed listing: %s", async (_name, listing, message) => {
    const client: BridgeClient = {
      tools: async () => listing as never,
      callTool: async () => ({}),
    };
    await expect(bridgeTools(client)).rejects.toThrow(message);
    await expect(bridgeTools(client)).rejects.toMatchObject({ code: 'BRIDGE_CONFIGURATION' });
  });
});
