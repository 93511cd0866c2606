import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attachmentBudgetForTransport,
  attachmentTransportLimits,
  SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE,
  SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE,
} from '../src/index.js';
import { createUploadServer } from './fixtures/upload-server.mjs';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

// The size chain, end to end with real parts: a file of the toolkit's budget, the shipped hook
// (with that budget for the "files" server), the SDK client, and an SDK 1.x server whose transport
// limit comes from attachmentTransportLimits(). The SDK's defaults drop the same call.

const MiB = 1024 * 1024;
const SERVER = fileURLToPath(new URL('./fixtures/upload-server.mjs', import.meta.url));

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-size-chain-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a random file and the hook config giving the "files" server `budget` bytes. */
async function prepare(name: string, size: number, budget: number) {
  const bytes = randomBytes(size);
  const file = join(dir, name);
  await writeFile(file, bytes);
  const config = join(dir, `${name}.config.json`);
  await writeFile(config, JSON.stringify({ toolkitBudgets: { files: budget } }));
  const run = await runHook(stdinFor('claude-code', { attachments: [{ source: fileUrl(file) }] }), {
    env: { TOOLFENCE_HOOK_CONFIG: config, TOOLFENCE_HOOK_SETTLE_MS: '0' },
    timeoutMs: 30_000,
  });
  const output = JSON.parse(run.stdout).hookSpecificOutput;
  return { output, sha256: createHash('sha256').update(bytes).digest('hex') };
}

async function callOverStdio(limit: number | 'default', args: Record<string, unknown>) {
  const client = new Client({ name: 'size-chain', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER, 'stdio', String(limit)],
      stderr: 'ignore',
    }),
  );
  try {
    return await client.callTool({ name: 'upload', arguments: args }, undefined, {
      timeout: 60_000,
    });
  } finally {
    await client.close();
  }
}

describe('size chain over stdio (SDK 1.x StdioServerTransport)', () => {
  const budget = 8 * MiB;

  it('the SDK default buffer admits less than the budget', () => {
    expect(attachmentBudgetForTransport(SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE, 'stdio')).toBeLessThan(
      budget,
    );
  });

  it('delivers a file of exactly the budget with maxBufferSize from attachmentTransportLimits', async () => {
    const { output, sha256 } = await prepare('exact.bin', budget, budget);
    const limits = attachmentTransportLimits({ attachmentBytes: budget });
    const result = await callOverStdio(limits.stdioMaxBufferSize, output.updatedInput);
    expect(result.isError).toBeFalsy();
    const [received] = JSON.parse((result.content as { text: string }[])[0]?.text ?? '[]');
    expect(received).toEqual({ filename: 'exact.bin', size: budget, sha256 });
  }, 90_000);

  it('loses the same call with the SDK default buffer (the connection closes)', async () => {
    const { output } = await prepare('exact-default.bin', budget, budget);
    await expect(callOverStdio('default', output.updatedInput)).rejects.toThrow(
      /Connection closed/,
    );
  }, 90_000);

  it('denies a file one byte over the budget in the hook, with the sizes in the reason', async () => {
    const { output } = await prepare('over.bin', budget + 1, budget);
    expect(output.permissionDecision).toBe('deny');
    expect(output.permissionDecisionReason).toContain(
      `HOOK_TOOLKIT_BUDGET_EXCEEDED: attachments[0]: the file is 8 MiB (${budget + 1} bytes); this toolkit (files) accepts up to 8 MiB (${budget} bytes) of attachments per call.`,
    );
  }, 60_000);
});

describe('size chain over Streamable HTTP (SDK 1.x, maxRequestBodySize)', () => {
  const budget = 4 * MiB;
  let http: Server;
  const limits = attachmentTransportLimits({ attachmentBytes: budget });

  beforeAll(async () => {
    http = createServer(async (request, response) => {
      const configured = request.url === '/raised';
      // No sessionIdGenerator: stateless, one server and transport per request.
      const transport = new StreamableHTTPServerTransport(
        configured ? { maxRequestBodySize: limits.httpMaxRequestBodySize } : {},
      );
      response.on('close', () => {
        void transport.close();
      });
      await createUploadServer().connect(transport);
      await transport.handleRequest(request, response);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => http.close(resolve));
  });

  async function callOverHttp(path: string, args: Record<string, unknown>) {
    const { port } = http.address() as AddressInfo;
    const client = new Client({ name: 'size-chain', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}${path}`)),
    );
    try {
      return await client.callTool({ name: 'upload', arguments: args });
    } finally {
      await client.close();
    }
  }

  it('the SDK default body limit admits less than the budget', () => {
    expect(
      attachmentBudgetForTransport(SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE, 'http'),
    ).toBeLessThan(budget);
  });

  it('delivers a file of exactly the budget with the raised body limit', async () => {
    const { output, sha256 } = await prepare('http-exact.bin', budget, budget);
    const result = await callOverHttp('/raised', output.updatedInput);
    const [received] = JSON.parse((result.content as { text: string }[])[0]?.text ?? '[]');
    expect(received).toEqual({ filename: 'http-exact.bin', size: budget, sha256 });
  }, 60_000);

  it('refuses the same call with the default body limit', async () => {
    const { output } = await prepare('http-default.bin', budget, budget);
    await expect(callOverHttp('/default', output.updatedInput)).rejects.toThrow();
  }, 60_000);
});
