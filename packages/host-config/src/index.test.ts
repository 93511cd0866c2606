import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { VERSION } from './index.js';

describe('public surface of @toolfence/host-config', () => {
  it('exports exactly the pinned runtime names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'ATTACHMENT_ITEM_OVERHEAD_BYTES',
        'ATTACHMENT_JSON_SCHEMA',
        'DEFAULT_MAX_ATTACHMENTS',
        'DEFAULT_OTHER_ARGUMENT_BYTES',
        'SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE',
        'SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE',
        'STDIO_READ_CHUNK_BYTES',
        'attachmentBudgetForTransport',
        'attachmentTransportLimits',
        'toSnakeCaseMissingHookPayload',
        'AttachmentDataInvalidError',
        'AttachmentOptionError',
        'AttachmentSourceScheme',
        'AttachmentTooLargeError',
        'CLIENT_MIN_VERSIONS',
        'HOOK_CLIENTS',
        'HOOK_CONFIG_FILENAME',
        'HOOK_DENY_CODES',
        'HOOK_ENVIRONMENT',
        'HOOK_PROTOCOL_VERSION',
        'HOOK_SCRIPT',
        'HOOK_SCRIPT_FILENAME',
        'HOOK_SCRIPT_URL',
        'HOOK_SETTLE_MS',
        'HOOK_TIMEOUT_SECONDS',
        'HookPayloadOptionError',
        'HostConfigError',
        'INSTALL_BACKUP_SUFFIX',
        'InstallConfigMalformedError',
        'InstallHookConfigUntrustedError',
        'InstallPathUnsafeError',
        'InstallUsageError',
        'InstallWriteError',
        'LEGACY_HOOK_SCRIPT_FILENAMES',
        'MAX_BYTES',
        'MAX_HOOK_ATTACHMENTS',
        'MAX_HOOK_ATTACHMENTS_CEILING',
        'MAX_HOOK_DEPTH',
        'MAX_HOOK_DEPTH_CEILING',
        'MAX_HOOK_INPUT_BYTES',
        'MAX_TOTAL_BYTES',
        'MISSING_HOOK_META_KEY',
        'VERSION',
        'buildMissingHookPayload',
        'classifyAttachmentSource',
        'decodeDataAttachment',
        'getHookSetup',
        'getHookStatus',
        'installHook',
        'missingHookToolResult',
        'readHookProtocolVersion',
        'runCli',
        'uninstallHook',
      ].sort(),
    );
  });

  it('reports the version of its package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(manifest.version);
  });
});
