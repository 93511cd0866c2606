import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createToolContext } from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgeTools } from '../src/bridge/bridge-tools.js';
import { McpClient } from '../src/client/mcp-client.js';
import { CHILD_ENV, FILESYSTEM_ENTRY } from './helpers.js';

const context = createToolContext({ runId: 'fs-run' });

describe('McpClient with server-filesystem (stdio)', () => {
  let allowed: string;
  let outside: string;
  beforeAll(async () => {
    allowed = await realpath(await mkdtemp(join(tmpdir(), 'mcp-bridge-allowed-')));
    outside = await realpath(await mkdtemp(join(tmpdir(), 'mcp-bridge-outside-')));
    await writeFile(join(allowed, 'inside.txt'), 'inside');
    await writeFile(join(outside, 'secret.txt'), 'secret');
  });
  afterAll(async () => {
    await rm(allowed, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  it('keeps the operator allow-list because no roots capability is declared', async () => {
    const client = new McpClient({
      command: [process.execPath, FILESYSTEM_ENTRY, allowed],
      env: CHILD_ENV,
    });
    try {
      const tools = await bridgeTools(client, {
        prefix: 'fs',
        allow: ['read_text_file', 'write_file'],
      });
      const read = tools.find((tool) => tool.remoteName === 'read_text_file');
      const inside = await read?.invoke({ path: join(allowed, 'inside.txt') }, context);
      expect(inside?.isError).not.toBe(true);
      expect(JSON.stringify(inside?.content)).toContain('inside');
      const escaped = await read?.invoke({ path: join(outside, 'secret.txt') }, context);
      expect(escaped?.isError).toBe(true);
      expect(JSON.stringify(escaped?.content)).not.toContain('secret"');
      // No bridge gate by default (the registry's policy decides). With approvalRisk set,
      // write_file, which declares no tool-contract, is gated by its destructiveHint: true (the
      // hint floor); read_text_file (readOnlyHint: true) is not.
      expect(tools.find((tool) => tool.remoteName === 'write_file')?.needsApproval).toBe(false);
      const gated = await bridgeTools(client, {
        prefix: 'fs',
        allow: ['read_text_file', 'write_file'],
        approvalRisk: 'high-risk-write',
      });
      expect(
        Object.fromEntries(gated.map((tool) => [tool.remoteName, tool.needsApproval])),
      ).toEqual({ read_text_file: false, write_file: true });
    } finally {
      await client.close();
    }
  });

  it('declares roots only when the host supplies them (the server then replaces its list)', async () => {
    const client = new McpClient({
      command: [process.execPath, FILESYSTEM_ENTRY, allowed],
      env: CHILD_ENV,
      roots: [{ uri: pathToFileURL(outside).href, name: 'outside' }],
    });
    try {
      await client.tools();
      // give the server a moment to ask for roots after `initialized`
      await new Promise((resolve) => setTimeout(resolve, 200));
      const result = await client.callTool('read_text_file', { path: join(outside, 'secret.txt') });
      expect(result.isError).not.toBe(true);
      expect(JSON.stringify(result.content)).toContain('secret');
    } finally {
      await client.close();
    }
  });
});
