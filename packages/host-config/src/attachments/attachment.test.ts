import { describe, expect, it } from 'vitest';
import {
  ATTACHMENT_JSON_SCHEMA,
  AttachmentSourceScheme,
  classifyAttachmentSource,
} from './attachment.js';

describe('classifyAttachmentSource', () => {
  it.each([
    ['file:///home/u/spec.pdf', AttachmentSourceScheme.FILE],
    ['FILE:///home/u/spec.pdf', AttachmentSourceScheme.FILE],
    ['file:relative.txt', AttachmentSourceScheme.FILE],
    ['file://host/share/x', AttachmentSourceScheme.FILE],
    ['data:application/pdf;base64,JVBERi0=', AttachmentSourceScheme.DATA],
    ['DATA:,hello', AttachmentSourceScheme.DATA],
    ['https://example.com/a.png', AttachmentSourceScheme.URL],
    ['http://example.com/a.png', AttachmentSourceScheme.URL],
    ['HTTPS://EXAMPLE.COM', AttachmentSourceScheme.URL],
    ['ftp://example.com/a', AttachmentSourceScheme.UNSUPPORTED],
    ['javascript:alert(1)', AttachmentSourceScheme.UNSUPPORTED],
    ['/home/u/spec.pdf', AttachmentSourceScheme.UNSUPPORTED],
    ['C:\\Users\\u\\spec.pdf', AttachmentSourceScheme.UNSUPPORTED],
    [' file:///etc/passwd', AttachmentSourceScheme.UNSUPPORTED],
    ['', AttachmentSourceScheme.UNSUPPORTED],
    [42, AttachmentSourceScheme.UNSUPPORTED],
    [null, AttachmentSourceScheme.UNSUPPORTED],
  ])('classifies %j as %s', (source, scheme) => {
    expect(classifyAttachmentSource(source)).toBe(scheme);
  });

  it('supports the one-branch server pattern', () => {
    const handle = (source: string) => {
      switch (classifyAttachmentSource(source)) {
        case AttachmentSourceScheme.DATA:
          return 'decode';
        case AttachmentSourceScheme.FILE:
          return 'missing-hook';
        default:
          return 'reject';
      }
    };
    expect(handle('file:///x')).toBe('missing-hook');
    expect(handle('data:,x')).toBe('decode');
    expect(handle('https://x')).toBe('reject');
  });
});

describe('ATTACHMENT_JSON_SCHEMA', () => {
  it('requires only source and allows toolkit fields', () => {
    expect(ATTACHMENT_JSON_SCHEMA.required).toEqual(['source']);
    expect(ATTACHMENT_JSON_SCHEMA.additionalProperties).toBe(true);
    expect(Object.keys(ATTACHMENT_JSON_SCHEMA.properties)).toEqual([
      'source',
      'filename',
      'mime_type',
    ]);
  });

  it('uses no string format that would reject a data: URI (VS Code validates updatedInput)', () => {
    expect(JSON.stringify(ATTACHMENT_JSON_SCHEMA)).not.toContain('"format"');
  });

  it('is deeply frozen', () => {
    expect(Object.isFrozen(ATTACHMENT_JSON_SCHEMA.properties.source)).toBe(true);
  });
});
