import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FileSystemTool,
  HttpTool,
  PermissionDeniedError,
  RuleBasedPolicy,
  ShellTool,
  ToolRegistry,
} from '../src/index.js';
import { createGuardedDispatcher } from '../src/net/index.js';
import { type LoopbackServer, startHttpServer } from './net-helpers.js';

let base: string;
let server: LoopbackServer;
let registry: ToolRegistry;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-builtin-registry-'));
  writeFileSync(join(base, 'notes.txt'), 'notes');
  server = await startHttpServer((incoming, response) => response.end(`method ${incoming.method}`));
  const policy = new RuleBasedPolicy([
    { tool: 'http', operation: 'GET', decision: 'allow' },
    { tool: 'http', decision: 'deny', reason: 'only GET' },
    { tool: 'filesystem', operation: ['read', 'list', 'write'], decision: 'allow' },
    { tool: 'filesystem', operation: 'delete', decision: 'deny', reason: 'no deletes' },
    { tool: 'shell', operation: 'echo', decision: 'allow' },
  ]);
  registry = new ToolRegistry({
    authorizer: policy,
    tools: [
      new FileSystemTool({ root: base, allowWrite: true }),
      new HttpTool({
        allowedHosts: ['127.0.0.1'],
        allowedMethods: ['GET', 'POST'],
        requireHttps: false,
        dispatcher: createGuardedDispatcher({ allowNonPublic: (_t, a) => a.range === 'loopback' }),
      }),
      new ShellTool({ workspace: base, allowedCommands: ['echo', 'cat'] }),
    ],
  });
  await registry.ready();
});

afterAll(async () => {
  await registry.close();
  await server.close();
  rmSync(base, { recursive: true, force: true });
});

describe('built-in tools in a ToolRegistry with a RuleBasedPolicy', () => {
  it('lets the policy see the HTTP method as the operation', async () => {
    const result = await registry.invoke(
      'http',
      { url: `${server.origin}/`, method: 'GET' },
      { runId: 'r' },
    );
    expect((result.structuredContent as { body: string }).body).toBe('method GET');
    await expect(
      registry.invoke(
        'http',
        { url: `${server.origin}/`, method: 'POST', body: 'x' },
        { runId: 'r' },
      ),
    ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
  });

  it('lets the policy see the filesystem operation', async () => {
    const read = await registry.invoke(
      'filesystem',
      { operation: 'read', path: 'notes.txt' },
      { runId: 'r' },
    );
    expect((read.structuredContent as { content: string }).content).toBe('notes');
    await expect(
      registry.invoke('filesystem', { operation: 'delete', path: 'notes.txt' }, { runId: 'r' }),
    ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
    expect(readFileSync(join(base, 'notes.txt'), 'utf8')).toBe('notes');
  });

  it('denies filesystem writes in a read-only scope', async () => {
    await expect(
      registry.invoke(
        'filesystem',
        { operation: 'write', path: 'new.txt', content: 'x' },
        { runId: 'r', accessScope: 'read-only' },
      ),
    ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
  });

  it('denies shell commands the policy does not list, and any shell call in a read-only scope', async () => {
    const echo = await registry.invoke('shell', { command: 'echo', args: ['hi'] }, { runId: 'r' });
    expect((echo.structuredContent as { stdout: string }).stdout).toBe('hi\n');
    await expect(
      registry.invoke('shell', { command: 'cat', args: ['notes.txt'] }, { runId: 'r' }),
    ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
    await expect(
      registry.invoke('shell', { command: 'echo' }, { runId: 'r', accessScope: 'read-only' }),
    ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
  });

  it('validates arguments against the tool schemas', async () => {
    await expect(
      registry.invoke(
        'filesystem',
        { operation: 'read', path: 'notes.txt', extra: 1 },
        { runId: 'r' },
      ),
    ).rejects.toThrow();
  });
});
