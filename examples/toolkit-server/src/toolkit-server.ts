/**
 * An example toolkit built with `@modelcontextprotocol/sdk`, as a toolkit author would write it
 * with toolfence:
 *
 * - every tool declares its contract with `@toolfence/tool-contract` (read-only search, a write,
 *   a destructive delete, an external-publication send), published as MCP annotations;
 * - the send tool takes `attachments`, classifies each source with `@toolfence/host-config`,
 *   decodes `data:` bytes, and answers a `file://` source (the hook did not run in the user's
 *   client) with the install-or-upgrade payload, sending nothing onward.
 */
import { createHash } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  AttachmentSourceScheme,
  type AttachmentTransportLimits,
  attachmentTransportLimits,
  buildMissingHookPayload,
  classifyAttachmentSource,
  decodeDataAttachment,
  missingHookToolResult,
} from '@toolfence/host-config';
import { defineContract, withContractAnnotations } from '@toolfence/tool-contract';
import { z } from 'zod';

/** Contracts of the example tools: facts only their author knows. */
export const CONTRACTS = {
  search_notes: defineContract({ risk: 'read-only', contentTrust: 'untrusted', idempotent: true }),
  save_note: defineContract({ risk: 'low-risk-write', idempotent: true }),
  delete_note: defineContract({ risk: 'destructive', idempotent: true }),
  send_message: defineContract({ risk: 'external-publication', contentTrust: 'sensitive' }),
  export_report: defineContract({ risk: 'read-only', idempotent: true }),
} as const;

/**
 * The size chain, in one place: the most attachment bytes one `send_message` call may carry.
 * The transports get the limits that fit it (main.ts), the missing-hook payload asks for the hook
 * to be installed with it (`--budget toolfence-example=<bytes>`), so a larger file is denied in
 * the client with its size in the reason instead of the connection being dropped.
 */
export const ATTACHMENT_BUDGET_BYTES: number = 16 * 1024 * 1024;

/** The name the README's client configs give this server (`mcp__toolfence-example__<tool>`). */
export const SERVER_NAME = 'toolfence-example';

/** Transport limits for {@link ATTACHMENT_BUDGET_BYTES}: stdio `maxBufferSize`, HTTP body limit. */
export const TRANSPORT_LIMITS: AttachmentTransportLimits = attachmentTransportLimits({
  attachmentBytes: ATTACHMENT_BUDGET_BYTES,
  maxAttachments: 10,
});

/** Options of {@link createToolkitServer}. */
export interface ToolkitServerOptions {
  /** Where the toolkit documents attachments (used in the missing-hook payload). */
  readonly docsUrl?: string;
  /**
   * Replaces `search_notes`'s description: how the gateway demo plays a "rug pull" (a server
   * that changes a tool's definition after the user approved it). Default: the honest one.
   */
  readonly searchDescription?: string;
}

const attachmentSchema = z
  .object({
    source: z.string().describe('file:// path on the user machine, or a data: URI'),
    filename: z.string().optional(),
    mime_type: z.string().optional(),
  })
  .passthrough();

function text(value: unknown, isError = false) {
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(value) }],
    ...(isError ? { isError: true } : {}),
  };
}

/** Builds the example toolkit's MCP server (connect it to any SDK server transport). */
export function createToolkitServer(options: ToolkitServerOptions = {}): McpServer {
  const notes = new Map<string, string>([
    ['welcome', 'Welcome to the toolfence example toolkit.'],
    ['roadmap', 'Ship the attachment hook; bridge every server through the registry.'],
  ]);
  const sent: { to: string; bytes: number }[] = [];
  const server = new McpServer({ name: 'toolfence-example-toolkit', version: '1.0.0' });

  server.registerTool(
    'search_notes',
    withContractAnnotations(CONTRACTS.search_notes, {
      description:
        options.searchDescription ?? 'Search notes by a word; returns matching note ids.',
      inputSchema: { query: z.string().min(1).max(200) },
    }),
    async ({ query }) => {
      const needle = query.toLowerCase();
      const ids = [...notes]
        .filter(([, body]) => body.toLowerCase().includes(needle))
        .map(([id]) => id);
      return text({ ids });
    },
  );

  server.registerTool(
    'save_note',
    withContractAnnotations(CONTRACTS.save_note, {
      description: 'Create or overwrite a note.',
      inputSchema: { id: z.string().regex(/^[a-z0-9-]{1,40}$/), body: z.string().max(10_000) },
    }),
    async ({ id, body }) => {
      notes.set(id, body);
      return text({ saved: id, notes: notes.size });
    },
  );

  server.registerTool(
    'delete_note',
    withContractAnnotations(CONTRACTS.delete_note, {
      description: 'Delete a note permanently.',
      inputSchema: { id: z.string().regex(/^[a-z0-9-]{1,40}$/) },
    }),
    async ({ id }) => text({ deleted: notes.delete(id) }),
  );

  server.registerTool(
    'send_message',
    withContractAnnotations(CONTRACTS.send_message, {
      description:
        'Send a message with attachments to a recipient. Attachments name a local file as a file:// URL; the toolfence hook in the client substitutes its bytes.',
      inputSchema: {
        to: z.string().email(),
        body: z.string().max(10_000),
        attachments: z.array(attachmentSchema).max(10).default([]),
      },
    }),
    async ({ to, body, attachments }) => {
      const received = [];
      for (const attachment of attachments) {
        const scheme = classifyAttachmentSource(attachment.source);
        if (scheme === AttachmentSourceScheme.FILE) {
          // The hook did not run in the user's client: send nothing, explain how to fix it.
          return missingHookToolResult(
            buildMissingHookPayload({
              docsUrl: options.docsUrl ?? 'https://example.com/toolkit/attachments',
              exampleToolName: 'send_message',
              displayName: 'the toolfence example toolkit',
              maxAttachmentBytes: ATTACHMENT_BUDGET_BYTES,
              serverName: SERVER_NAME,
            }),
          );
        }
        if (scheme !== AttachmentSourceScheme.DATA) {
          return text(
            { error: `unsupported attachment source (${scheme}); send the file itself` },
            true,
          );
        }
        const { mimeType, bytes } = decodeDataAttachment(attachment.source, {
          maxBytes: ATTACHMENT_BUDGET_BYTES,
        });
        received.push({
          filename: attachment.filename ?? null,
          mimeType,
          bytes: bytes.byteLength,
          sha256: createHash('sha256').update(bytes).digest('hex'),
        });
      }
      sent.push({ to, bytes: received.reduce((sum, item) => sum + item.bytes, 0) });
      return text({ sent: true, to, bodyChars: body.length, attachments: received });
    },
  );

  server.registerTool(
    'export_report',
    withContractAnnotations(CONTRACTS.export_report, {
      description: 'Export a report of the given size in bytes (for testing response limits).',
      inputSchema: {
        size_bytes: z
          .number()
          .int()
          .min(1)
          .max(16 * 1024 * 1024),
      },
    }),
    async ({ size_bytes }) => ({
      content: [{ type: 'text' as const, text: 'x'.repeat(size_bytes) }],
    }),
  );

  return server;
}
