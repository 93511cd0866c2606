import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { bridgeTools, McpClient } from '@toolfence/mcp-bridge';
import { FileSystemTool, RiskPolicy, type ToolEvent, ToolRegistry } from '@toolfence/tools';
import {
  type FaultHttpServer,
  startFaultHttpServer,
} from '../../../packages/mcp-bridge/test/fault-http-server.ts';

const require = createRequire(import.meta.url);
const everythingEntry = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

/** Everything a framework test drives: one registry over real tools and servers. */
export interface Fixture {
  /** The registry: FileSystemTool, bridged server-everything and fault-server tools. */
  readonly registry: ToolRegistry;
  /** The FileSystemTool's root folder (holds `notes.txt`). */
  readonly root: string;
  /** The bridge's fault server; `calls` counts what it received per tool. */
  readonly fault: FaultHttpServer;
  /** Audit events of every call, in order. */
  readonly events: ToolEvent[];
  /** Stops the servers and removes the root. */
  close(): Promise<void>;
}

/**
 * Starts server-everything over stdio and the bridge's fault server over Streamable HTTP on
 * loopback, bridges both, and puts them with a FileSystemTool behind one RiskPolicy:
 * reads and `everything__echo` allow, filesystem writes ask, `fault__echo` is vetoed (deny),
 * `fault__drop` (the server drops the connection mid-call) allows.
 */
export async function setup(): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 'toolfence-frameworks-'));
  await writeFile(join(root, 'notes.txt'), 'hello from the root folder');
  const fault = await startFaultHttpServer();
  const everythingClient = new McpClient({
    command: [process.execPath, everythingEntry, 'stdio'],
    clientName: 'toolfence-agent-frameworks',
  });
  const faultClient = new McpClient({
    url: fault.url,
    clientName: 'toolfence-agent-frameworks',
    allowNonPublic: (target, address) =>
      target.hostname === '127.0.0.1' && address.range === 'loopback',
  });
  const events: ToolEvent[] = [];
  const registry = new ToolRegistry({
    authorizer: new RiskPolicy({
      risk: { allowUpTo: 'low-risk-write', askUpTo: 'destructive' },
      overrides: {
        filesystem: { risk: 'high-risk-write', contentTrust: 'trusted' },
        everything__echo: { risk: 'read-only', contentTrust: 'trusted' },
        'everything__get-tiny-image': { risk: 'read-only', contentTrust: 'trusted' },
        'everything__get-structured-content': { risk: 'read-only', contentTrust: 'trusted' },
        fault__drop: { risk: 'low-risk-write', contentTrust: 'trusted' },
        fault__echo: { veto: true, reason: 'the test vetoes it' },
      },
    }),
    onEvent: (event) => events.push(event),
    tools: [
      new FileSystemTool({ root, allowWrite: true }),
      ...(await bridgeTools(everythingClient, {
        prefix: 'everything',
        approvalRisk: 'none',
        allow: ['echo', 'get-tiny-image', 'get-structured-content'],
      })),
      ...(await bridgeTools(faultClient, {
        prefix: 'fault',
        approvalRisk: 'none',
        allow: ['echo', 'drop'],
      })),
    ],
  });
  await registry.ready();
  return {
    registry,
    root,
    fault,
    events,
    async close() {
      await registry.close().catch(() => {});
      await Promise.allSettled([everythingClient.close(), faultClient.close()]);
      await fault.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Tool calls that completed on a tool (`completed` events), by tool name. */
export function completedCalls(events: readonly ToolEvent[], toolName: string): number {
  return events.filter((event) => event.type === 'completed' && event.toolName === toolName).length;
}

/** How many calls entered the registry (`started` events) per tool call id, in one run. */
export function startsByCall(events: readonly ToolEvent[], runId: string): Record<string, number> {
  const starts: Record<string, number> = {};
  for (const event of events) {
    if (event.type !== 'started' || event.runId !== runId) continue;
    const key = event.stepId ?? '(none)';
    starts[key] = (starts[key] ?? 0) + 1;
  }
  return starts;
}
