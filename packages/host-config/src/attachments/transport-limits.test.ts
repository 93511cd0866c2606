import { describe, expect, it } from 'vitest';
import { AttachmentOptionError } from './errors.js';
import { MAX_TOTAL_BYTES } from './hook-script.js';
import {
  ATTACHMENT_ITEM_OVERHEAD_BYTES,
  attachmentBudgetForTransport,
  attachmentTransportLimits,
  DEFAULT_OTHER_ARGUMENT_BYTES,
  SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE,
  SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE,
  STDIO_READ_CHUNK_BYTES,
} from './transport-limits.js';

const MiB = 1024 * 1024;

describe('attachmentTransportLimits', () => {
  it('covers the hook default budget (25 MiB) by default', () => {
    const limits = attachmentTransportLimits();
    expect(limits.attachmentBytes).toBe(MAX_TOTAL_BYTES);
    expect(limits.base64Bytes).toBe(4 * Math.ceil(MAX_TOTAL_BYTES / 3));
    expect(limits.messageBytes).toBe(
      limits.base64Bytes + 10 * ATTACHMENT_ITEM_OVERHEAD_BYTES + DEFAULT_OTHER_ARGUMENT_BYTES,
    );
    expect(limits.stdioMaxBufferSize).toBe(limits.messageBytes + 1 + STDIO_READ_CHUNK_BYTES);
    expect(limits.httpMaxRequestBodySize).toBe(limits.messageBytes);
    // 25 MiB of files need a transport well above the SDK defaults.
    expect(limits.stdioMaxBufferSize).toBeGreaterThan(3 * SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE);
  });

  it('rounds base64 up to whole quadruples', () => {
    expect(attachmentTransportLimits({ attachmentBytes: 1 }).base64Bytes).toBe(4);
    expect(attachmentTransportLimits({ attachmentBytes: 3 }).base64Bytes).toBe(4);
    expect(attachmentTransportLimits({ attachmentBytes: 4 }).base64Bytes).toBe(8);
  });

  it('is the exact inverse of attachmentBudgetForTransport (never over the limit)', () => {
    for (const limit of [SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE, 64 * MiB, 300_001]) {
      const budget = attachmentBudgetForTransport(limit, 'stdio');
      expect(
        attachmentTransportLimits({ attachmentBytes: budget }).stdioMaxBufferSize,
      ).toBeLessThanOrEqual(limit);
      expect(
        attachmentTransportLimits({ attachmentBytes: budget + 3 }).stdioMaxBufferSize,
      ).toBeGreaterThan(limit);
    }
    for (const limit of [SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE, 50 * MiB]) {
      const budget = attachmentBudgetForTransport(limit, 'http');
      expect(
        attachmentTransportLimits({ attachmentBytes: budget }).httpMaxRequestBodySize,
      ).toBeLessThanOrEqual(limit);
      expect(
        attachmentTransportLimits({ attachmentBytes: budget + 3 }).httpMaxRequestBodySize,
      ).toBeGreaterThan(limit);
    }
  });

  it('states what the SDK defaults admit: about 7.4 MiB over stdio, 2.9 MiB over HTTP', () => {
    expect(attachmentBudgetForTransport(SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE, 'stdio')).toBe(7735293);
    expect(attachmentBudgetForTransport(SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE, 'http')).toBe(
      3065856,
    );
    expect(attachmentBudgetForTransport(1000, 'http')).toBe(0);
  });

  it.each([
    ['negative attachmentBytes', () => attachmentTransportLimits({ attachmentBytes: -1 })],
    ['fractional attachmentBytes', () => attachmentTransportLimits({ attachmentBytes: 1.5 })],
    ['zero maxAttachments', () => attachmentTransportLimits({ maxAttachments: 0 })],
    [
      'string otherArgumentBytes',
      () => attachmentTransportLimits({ otherArgumentBytes: '1' as never }),
    ],
    ['unknown option', () => attachmentTransportLimits({ attachmentByte: 1 } as never)],
    ['null options', () => attachmentTransportLimits(null as never)],
    ['budget: zero limit', () => attachmentBudgetForTransport(0, 'stdio')],
    ['budget: unknown transport', () => attachmentBudgetForTransport(1000, 'sse' as never)],
    [
      'budget: attachmentBytes is not a budget option',
      () => attachmentBudgetForTransport(1000, 'http', { attachmentBytes: 1 } as never),
    ],
  ])('refuses %s with ATTACHMENT_OPTION_INVALID', (_name, call) => {
    expect(call).toThrow(AttachmentOptionError);
  });
});
