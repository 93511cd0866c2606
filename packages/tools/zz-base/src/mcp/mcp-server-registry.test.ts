import { afterEach, describe, expect, it, vi } from 'vitest';
import { createToolContext } from '../registry/tool-context.js';
import {
  McpCapabilityError,
  McpCatalogStaleError,
  McpConfigurationError,
  McpLifecycleError,
  McpTimeoutError,
  McpTransportError,
} from './errors.js';
import { McpServerConfig } from './mcp-server-config.js';
import { McpServerConnection, type McpServerEvent } from './mcp-server-connection.js';
import { McpServerRegistry } from './mcp-server-registry.js';
import type { McpCallToolParams, McpInitializeResult, McpSession } from './mcp-session.js';

const context = createToolContext({ runId: 'unit' });

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** An in-memory session with knobs for every lifecycle case. */
class FakeSession implements McpSession {
  readonly label: string;
  capabilities: Record<string, unknown> | undefined = { tools: {} };
  tools: unknown[] = [{ name: 'echo', inputSchema: { type: 'object' } }];
  initializeError: unknown;
  initializeNever = false;
  closeNever = false;
  callGate: Promise<void> | undefined;
  callError: unknown;
  calls: string[] = [];
  closed = 0;
  listToolsCalls = 0;
  listener: (() => void) | undefined;

  constructor(label: string) {
    this.label = label;
  }

  async initialize(): Promise<McpInitializeResult> {
    if (this.initializeNever) await new Promise(() => undefined);
    if (this.initializeError !== undefined) throw this.initializeError;
    return this.capabilities === undefined ? {} : { capabilities: this.capabilities };
  }
  async listTools(): Promise<unknown> {
    this.listToolsCalls += 1;
    return { tools: this.tools };
  }
  async listResources(): Promise<unknown> {
    return { resources: [] };
  }
  async listResourceTemplates(): Promise<unknown> {
    return { resourceTemplates: [] };
  }
  async listPrompts(): Promise<unknown> {
    return { prompts: [] };
  }
  async callTool(params: McpCallToolParams): Promise<unknown> {
    this.calls.push(params.name);
    if (this.callError !== undefined) throw this.callError;
    await this.callGate;
    return { content: [{ type: 'text', text: `${this.label}:${params.name}` }] };
  }
  async readResource(): Promise<unknown> {
    return { contents: [] };
  }
  async getPrompt(): Promise<unknown> {
    return { messages: [] };
  }
  async close(): Promise<void> {
    this.closed += 1;
    if (this.closeNever) await new Promise(() => undefined);
  }
  onToolsListChanged(listener: () => void): () => void {
    this.listener = listener;
    return () => {
      this.listener = undefined;
    };
  }
}

function connection(
  session: McpSession,
  config: Partial<ConstructorParameters<typeof McpServerConfig>[0]> = {},
) {
  return new McpServerConnection({ session, config: { name: 'srv', ...config } });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('McpServerConfig', () => {
  it('has the documented defaults', () => {
    const config = new McpServerConfig({ name: 'files' });
    expect(config).toMatchObject({
      name: 'files',
      toolNamespace: 'files',
      initializeOnStart: true,
      ownsSession: false,
      listChanged: { rediscover: false, debounceMs: 250, minIntervalMs: 5_000 },
    });
    expect(config.limits.requestTimeoutMs).toBe(30_000);
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a name with a space', { name: 'my server' }],
    ['a name that is not a valid namespace and no namespace', { name: 'my.server' }],
    ['a namespace with "__"', { name: 'a', toolNamespace: 'a__b' }],
    ['initializeOnStart as a string', { name: 'a', initializeOnStart: 'yes' }],
    ['ownsSession as a number', { name: 'a', ownsSession: 1 }],
    ['a boolean limit', { name: 'a', limits: { maxPages: true } }],
    ['a negative debounce', { name: 'a', listChanged: { debounceMs: -1 } }],
    ['rediscover as a string', { name: 'a', listChanged: { rediscover: 'true' } }],
  ])('refuses %s', (_label, init) => {
    expect(() => new McpServerConfig(init as never)).toThrow(McpConfigurationError);
  });

  it('accepts a dotted server name with an explicit namespace', () => {
    expect(
      new McpServerConfig({ name: 'my.server', toolNamespace: 'my-server' }).toolNamespace,
    ).toBe('my-server');
  });
});

describe('McpServerConnection', () => {
  it('refuses a session that lacks a method', () => {
    const session = new FakeSession('a') as unknown as Record<string, unknown>;
    session.getPrompt = undefined;
    expect(() => connection(session as unknown as McpSession)).toThrow(McpConfigurationError);
  });

  it('tries a capability that is unknown because initialize never ran', async () => {
    const session = new FakeSession('a');
    session.capabilities = undefined;
    const registry = new McpServerRegistry();
    await registry.register(connection(session, { initializeOnStart: false }));
    expect((await registry.listResources('srv')).items).toEqual([]);
  });

  it('raises a capability error only for an explicitly missing capability', async () => {
    const session = new FakeSession('a');
    const registry = new McpServerRegistry();
    await registry.register(connection(session));
    await expect(registry.listPrompts('srv')).rejects.toBeInstanceOf(McpCapabilityError);
  });

  it('reports a raw session error as a transport error without its text', async () => {
    const session = new FakeSession('a');
    session.callError = new Error('token=SECRET-123 from remote');
    const registry = new McpServerRegistry();
    await registry.register(connection(session));
    const [tool] = (await registry.discoverTools('srv')).tools;
    const error = await tool?.invoke({}, context).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpTransportError);
    expect(JSON.stringify(error)).not.toContain('SECRET');
    expect((error as Error).message).not.toContain('SECRET');
    expect((error as Error).cause).toBeUndefined();
  });

  it('enforces initializeTimeoutMs', async () => {
    const session = new FakeSession('a');
    session.initializeNever = true;
    const registry = new McpServerRegistry();
    await expect(
      registry.register(connection(session, { limits: { initializeTimeoutMs: 20 } })),
    ).rejects.toBeInstanceOf(McpTimeoutError);
    expect(registry.names()).toEqual([]);
  });

  it('enforces closeTimeoutMs on an owned session', async () => {
    const session = new FakeSession('a');
    session.closeNever = true;
    const events: McpServerEvent[] = [];
    const registry = new McpServerRegistry({ onEvent: (event) => events.push(event) });
    await registry.register(
      connection(session, { ownsSession: true, limits: { closeTimeoutMs: 20 } }),
    );
    await expect(registry.close()).rejects.toBeInstanceOf(McpTimeoutError);
    expect(events).toEqual([{ type: 'close_failed', server: 'srv', code: 'MCP_TIMEOUT' }]);
  });
});

describe('McpServerRegistry lifecycle', () => {
  it('refuses a second server with the same name or namespace', async () => {
    const registry = new McpServerRegistry();
    await registry.register(connection(new FakeSession('a')));
    await expect(registry.register(connection(new FakeSession('b')))).rejects.toBeInstanceOf(
      McpLifecycleError,
    );
    await expect(
      registry.register(
        new McpServerConnection({
          session: new FakeSession('c'),
          config: { name: 'other', toolNamespace: 'srv' },
        }),
      ),
    ).rejects.toBeInstanceOf(McpConfigurationError);
  });

  it('does not register a server whose initialize fails, and closes an owned session', async () => {
    const session = new FakeSession('a');
    session.initializeError = new Error('boom');
    const registry = new McpServerRegistry();
    await expect(
      registry.register(connection(session, { ownsSession: true })),
    ).rejects.toBeInstanceOf(McpTransportError);
    expect(registry.names()).toEqual([]);
    expect(session.closed).toBe(1);
  });

  it('never closes a session it does not own', async () => {
    const session = new FakeSession('a');
    const registry = new McpServerRegistry();
    await registry.register(connection(session));
    await registry.unregister('srv');
    await registry.close();
    expect(session.closed).toBe(0);
  });

  it('keeps the old connection when the replacement fails to initialize', async () => {
    const registry = new McpServerRegistry();
    await registry.register(connection(new FakeSession('old')));
    const [tool] = (await registry.discoverTools('srv')).tools;
    const failing = new FakeSession('new');
    failing.initializeError = new Error('nope');
    await expect(
      registry.replace('srv', connection(failing, { ownsSession: true })),
    ).rejects.toThrow();
    expect(failing.closed).toBe(1);
    expect((await tool?.invoke({}, context))?.content).toEqual([
      { type: 'text', text: 'old:echo' },
    ]);
  });

  it('lets a call holding the old lease finish on the old session; the next call is stale', async () => {
    const registry = new McpServerRegistry();
    const oldSession = new FakeSession('old');
    const gate = deferred();
    oldSession.callGate = gate.promise;
    await registry.register(connection(oldSession, { ownsSession: true }));
    const [tool] = (await registry.discoverTools('srv')).tools;
    const inFlight = tool?.invoke({}, context);
    const newSession = new FakeSession('new');
    let replaced = false;
    const replacing = registry
      .replace('srv', connection(newSession, { ownsSession: true }))
      .then(() => {
        replaced = true;
      });
    await vi.waitFor(() => expect(registry.get('srv').session).toBe(newSession));
    await expect(tool?.invoke({}, context)).rejects.toBeInstanceOf(McpCatalogStaleError);
    expect(oldSession.closed).toBe(0);
    expect(replaced).toBe(false);
    gate.resolve();
    expect((await inFlight)?.content).toEqual([{ type: 'text', text: 'old:echo' }]);
    await replacing;
    expect(oldSession.closed).toBe(1);
    const [fresh] = (await registry.discoverTools('srv')).tools;
    expect((await fresh?.invoke({}, context))?.content).toEqual([
      { type: 'text', text: 'new:echo' },
    ]);
    expect(newSession.closed).toBe(0);
  });

  it('lists a whole catalog on one session even when a replacement lands midway', async () => {
    const registry = new McpServerRegistry();
    const oldSession = new FakeSession('old');
    oldSession.capabilities = { tools: {}, resources: {}, prompts: {} };
    const gate = deferred();
    const listResources = oldSession.listResources.bind(oldSession);
    oldSession.listResources = async () => {
      await gate.promise;
      return listResources();
    };
    const promptsFrom: string[] = [];
    oldSession.listPrompts = async () => {
      promptsFrom.push('old');
      return { prompts: [{ name: 'p' }] };
    };
    await registry.register(connection(oldSession));
    const catalog = registry.catalog('srv');
    const newSession = new FakeSession('new');
    newSession.listPrompts = async () => {
      promptsFrom.push('new');
      return { prompts: [] };
    };
    const replacing = registry.replace('srv', connection(newSession));
    await vi.waitFor(() => expect(registry.get('srv').session).toBe(newSession));
    gate.resolve();
    expect((await catalog).prompts).toEqual([{ name: 'p', arguments: [] }]);
    expect(promptsFrom).toEqual(['old']);
    await replacing;
  });

  it('refuses prompt arguments that are not strings and an empty resource URI', async () => {
    const registry = new McpServerRegistry();
    const session = new FakeSession('a');
    session.capabilities = { tools: {}, resources: {}, prompts: {} };
    await registry.register(connection(session));
    await expect(registry.getPrompt('srv', 'p', { n: 1 } as never)).rejects.toBeInstanceOf(
      McpConfigurationError,
    );
    await expect(registry.readResource('srv', '')).rejects.toBeInstanceOf(McpConfigurationError);
  });

  it('refuses replace of an unknown server and with a different name', async () => {
    const registry = new McpServerRegistry();
    await expect(registry.replace('srv', connection(new FakeSession('a')))).rejects.toBeInstanceOf(
      McpLifecycleError,
    );
    await registry.register(connection(new FakeSession('a')));
    await expect(
      registry.replace(
        'srv',
        new McpServerConnection({ session: new FakeSession('b'), config: { name: 'x' } }),
      ),
    ).rejects.toBeInstanceOf(McpConfigurationError);
  });

  it('makes adapters of an unregistered server raise a lifecycle error', async () => {
    const registry = new McpServerRegistry();
    await registry.register(connection(new FakeSession('a')));
    const [tool] = (await registry.discoverTools('srv')).tools;
    await registry.unregister('srv');
    await expect(tool?.invoke({}, context)).rejects.toBeInstanceOf(McpLifecycleError);
    await expect(registry.discoverTools('srv')).rejects.toBeInstanceOf(McpLifecycleError);
  });

  it('close waits for in-flight calls, is shared by repeated calls and refuses new work', async () => {
    const registry = new McpServerRegistry();
    const session = new FakeSession('a');
    const gate = deferred();
    session.callGate = gate.promise;
    await registry.register(connection(session, { ownsSession: true }));
    const [tool] = (await registry.discoverTools('srv')).tools;
    const inFlight = tool?.invoke({}, context);
    const first = registry.close();
    const second = registry.close();
    expect(first).toBe(second);
    await expect(registry.discoverTools('srv')).rejects.toBeInstanceOf(McpLifecycleError);
    await expect(
      registry.register(connection(new FakeSession('b'), { name: 'b' })),
    ).rejects.toBeInstanceOf(McpLifecycleError);
    expect(session.closed).toBe(0);
    gate.resolve();
    await inFlight;
    await first;
    expect(session.closed).toBe(1);
  });

  it('keeps the catalog generation when a rediscovery finds the same tools', async () => {
    const registry = new McpServerRegistry();
    const session = new FakeSession('a');
    await registry.register(connection(session));
    const first = await registry.discoverTools('srv');
    const second = await registry.discoverTools('srv');
    expect(second.generation).toBe(first.generation);
    expect((await first.tools[0]?.invoke({}, context))?.content).toHaveLength(1);
    session.tools = [...session.tools, { name: 'more', inputSchema: { type: 'object' } }];
    const third = await registry.discoverTools('srv');
    expect(third.generation).toBe(first.generation + 1);
    await expect(first.tools[0]?.invoke({}, context)).rejects.toBeInstanceOf(McpCatalogStaleError);
  });
});

describe('list_changed handling', () => {
  it('debounces a burst into one rediscovery and rate-limits the next', async () => {
    vi.useFakeTimers();
    const events: McpServerEvent[] = [];
    const registry = new McpServerRegistry({ onEvent: (event) => events.push(event) });
    const session = new FakeSession('a');
    await registry.register(
      connection(session, {
        listChanged: { rediscover: true, debounceMs: 100, minIntervalMs: 5_000 },
      }),
    );
    await registry.discoverTools('srv');
    const baseline = session.listToolsCalls;
    for (let i = 0; i < 100; i += 1) session.listener?.();
    expect(registry.get('srv').catalogStale).toBe(true);
    await vi.advanceTimersByTimeAsync(99);
    expect(session.listToolsCalls).toBe(baseline);
    await vi.advanceTimersByTimeAsync(1);
    expect(session.listToolsCalls).toBe(baseline + 1);
    expect(registry.get('srv').catalogStale).toBe(false);
    // A second burst right after: held back until minIntervalMs has passed.
    for (let i = 0; i < 100; i += 1) session.listener?.();
    await vi.advanceTimersByTimeAsync(4_000);
    expect(session.listToolsCalls).toBe(baseline + 1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(session.listToolsCalls).toBe(baseline + 2);
    expect(events.filter((event) => event.type === 'tools_rediscovered')).toHaveLength(2);
    expect(events.filter((event) => event.type === 'tools_list_changed')).toHaveLength(200);
  });

  it('lists again when a change is announced during the listing, a bounded number of times', async () => {
    const registry = new McpServerRegistry();
    const session = new FakeSession('a');
    const original = session.listTools.bind(session);
    let announce = 1;
    session.listTools = async () => {
      if (announce > 0) {
        announce -= 1;
        session.listener?.();
      }
      return original();
    };
    await registry.register(connection(session));
    const first = await registry.discoverTools('srv');
    expect(session.listToolsCalls).toBe(2);
    expect(registry.get('srv').catalogStale).toBe(false);
    expect((await first.tools[0]?.invoke({}, context))?.content).toHaveLength(1);
    announce = 10;
    const second = await registry.discoverTools('srv');
    expect(session.listToolsCalls).toBe(5);
    expect(registry.get('srv').catalogStale).toBe(true);
    await expect(second.tools[0]?.invoke({}, context)).rejects.toBeInstanceOf(McpCatalogStaleError);
  });

  it('stops listening once the server is unregistered', async () => {
    const registry = new McpServerRegistry();
    const session = new FakeSession('a');
    await registry.register(connection(session, { listChanged: { rediscover: true } }));
    expect(session.listener).toBeDefined();
    await registry.unregister('srv');
    expect(session.listener).toBeUndefined();
  });
});
