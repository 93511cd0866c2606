import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AttachmentSourceScheme,
  buildMissingHookPayload,
  classifyAttachmentSource,
  decodeDataAttachment,
  HOOK_PROTOCOL_VERSION,
  HOOK_SCRIPT,
  MISSING_HOOK_META_KEY,
  missingHookToolResult,
} from '../src/index.js';
import { fileUrl, runHook, stdinFor, type stdinShapes } from './support/run-hook.js';

/** A toolkit server as a toolkit author would write it with the SDK and this package. */
function createToolkitServer(): McpServer {
  const server = new McpServer({ name: 'files-toolkit', version: '1.0.0' });
  const missingHook = buildMissingHookPayload({
    docsUrl: 'https://docs.example.com/files-toolkit/attachments',
    exampleToolName: 'upload',
    displayName: 'Files toolkit',
  });
  server.registerTool(
    'upload',
    {
      description: 'Uploads files',
      inputSchema: {
        title: z.string(),
        attachments: z.array(
          z.looseObject({
            source: z.string(),
            filename: z.string().optional(),
            mime_type: z.string().optional(),
          }),
        ),
      },
    },
    async ({ attachments }) => {
      const received = [];
      for (const attachment of attachments) {
        switch (classifyAttachmentSource(attachment.source)) {
          case AttachmentSourceScheme.DATA: {
            const { mimeType, bytes } = decodeDataAttachment(attachment.source, {
              maxBytes: 1024 * 1024,
            });
            received.push({
              filename: attachment.filename,
              mimeType,
              size: bytes.length,
              sha256: createHash('sha256').update(bytes).digest('hex'),
            });
            break;
          }
          case AttachmentSourceScheme.FILE:
            return missingHookToolResult(missingHook);
          default:
            return {
              isError: true,
              content: [{ type: 'text' as const, text: 'unsupported attachment source' }],
            };
        }
      }
      return { content: [{ type: 'text' as const, text: JSON.stringify(received) }] };
    },
  );
  return server;
}

let dir: string;
let file: string;
let bytes: Buffer;
let client: Client;
let server: McpServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-e2e-'));
  bytes = randomBytes(300_000);
  file = join(dir, 'scan 01.png');
  await writeFile(file, Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), bytes]));
  bytes = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), bytes]);
  server = createToolkitServer();
  client = new Client({ name: 'e2e-client', version: '1.0.0' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
});

afterAll(async () => {
  await client.close();
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

function rewrittenInput(client: keyof typeof stdinShapes, stdout: string): Record<string, unknown> {
  const output = JSON.parse(stdout);
  return client === 'cursor' ? output.updated_input : output.hookSpecificOutput.updatedInput;
}

describe('end to end: client hook, SDK client, toolkit server', () => {
  const clients = ['claude-code', 'codex', 'cursor', 'vscode'] as const;

  it.each(clients)('delivers exactly the file bytes through the %s hook', async (name) => {
    const args = { title: 'Scan', attachments: [{ source: fileUrl(file) }] };
    const hook = await runHook(stdinFor(name, args));
    expect(hook.code).toBe(0);
    const result = await client.callTool({
      name: 'upload',
      arguments: rewrittenInput(name, hook.stdout),
    });
    expect(result.isError).toBeFalsy();
    const content = result.content as { type: string; text: string }[];
    expect(JSON.parse(content[0]!.text)).toEqual([
      {
        filename: 'scan 01.png',
        mimeType: 'image/png',
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      },
    ]);
  });

  it('answers the same call without the hook with the missing-hook payload', async () => {
    const result = await client.callTool({
      name: 'upload',
      arguments: { title: 'Scan', attachments: [{ source: fileUrl(file) }] },
    });
    expect(result.isError).toBe(true);
    const content = result.content as { type: string; text: string }[];
    const message = JSON.parse(content[0]!.text);
    expect(message.error).toBe('attachment_hook_missing');
    // The model gets the compact form (no script text); programs read fullMessage.
    expect(Buffer.byteLength(content[0]!.text)).toBeLessThanOrEqual(3072);
    expect(content[0]!.text).not.toContain(HOOK_SCRIPT.slice(0, 200));
    expect(message.required_protocol_version).toBe(HOOK_PROTOCOL_VERSION);
    expect(Object.keys(message.install_by_client)).toEqual([
      'claude-code',
      'codex',
      'cursor',
      'vscode',
    ]);
    expect(result._meta?.[MISSING_HOOK_META_KEY]).toMatchObject({
      hook_filename: 'toolfence_attachment_substitution.cjs',
      min_version: HOOK_PROTOCOL_VERSION,
      docs_url: 'https://docs.example.com/files-toolkit/attachments',
    });
    expect(JSON.stringify(result)).not.toContain(bytes.subarray(0, 64).toString('base64'));
  });

  it('sends nothing when the hook denies: the client never calls the server', async () => {
    const hook = await runHook(
      stdinFor('claude-code', {
        title: 'x',
        attachments: [{ source: fileUrl(join(dir, 'missing.bin')) }],
      }),
    );
    const output = JSON.parse(hook.stdout);
    expect(output.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(output.hookSpecificOutput.updatedInput).toBeUndefined();
  });
});
