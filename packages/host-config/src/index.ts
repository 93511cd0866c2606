// Package metadata

// Attachment shape, classifier and decoder (server side)
export {
  ATTACHMENT_JSON_SCHEMA,
  type Attachment,
  type AttachmentJsonSchema,
  AttachmentSourceScheme,
  classifyAttachmentSource,
} from './attachments/attachment.js';
// Per-client setup and minimum versions
export {
  CLIENT_MIN_VERSIONS,
  type ClientMinVersion,
  getHookSetup,
  HOOK_CLIENTS,
  HOOK_TIMEOUT_SECONDS,
  type HookClient,
  type HookConfigFormat,
  type HookScope,
  type HookSetup,
  type HookSetupPaths,
} from './attachments/client-setup.js';
export {
  type DecodeDataAttachmentOptions,
  type DecodedDataAttachment,
  decodeDataAttachment,
} from './attachments/decode-data-attachment.js';
export {
  AttachmentDataInvalidError,
  AttachmentOptionError,
  AttachmentTooLargeError,
  HookPayloadOptionError,
} from './attachments/errors.js';
// The hook script and its constants
export {
  HOOK_CONFIG_FILENAME,
  HOOK_DENY_CODES,
  HOOK_ENVIRONMENT,
  HOOK_PROTOCOL_VERSION,
  HOOK_SCRIPT,
  HOOK_SCRIPT_FILENAME,
  HOOK_SCRIPT_URL,
  HOOK_SETTLE_MS,
  LEGACY_HOOK_SCRIPT_FILENAMES,
  MAX_BYTES,
  MAX_HOOK_ATTACHMENTS,
  MAX_HOOK_ATTACHMENTS_CEILING,
  MAX_HOOK_DEPTH,
  MAX_HOOK_DEPTH_CEILING,
  MAX_HOOK_INPUT_BYTES,
  MAX_TOTAL_BYTES,
  readHookProtocolVersion,
} from './attachments/hook-script.js';
// The missing-hook install/upgrade payload
export {
  buildMissingHookPayload,
  MISSING_HOOK_META_KEY,
  type MissingHookExtra,
  type MissingHookPayload,
  type MissingHookPayloadOptions,
  type MissingHookToolResult,
  missingHookToolResult,
  type SnakeCaseMissingHookPayload,
  toSnakeCaseMissingHookPayload,
} from './attachments/missing-hook-payload.js';
// Transport limits a toolkit server needs for an attachment budget
export {
  ATTACHMENT_ITEM_OVERHEAD_BYTES,
  type AttachmentTransportLimits,
  type AttachmentTransportLimitsOptions,
  type AttachmentTransportOptions,
  attachmentBudgetForTransport,
  attachmentTransportLimits,
  DEFAULT_MAX_ATTACHMENTS,
  DEFAULT_OTHER_ARGUMENT_BYTES,
  SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE,
  SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE,
  STDIO_READ_CHUNK_BYTES,
} from './attachments/transport-limits.js';
// Installer (also the `toolfence-host-config` command)
export {
  InstallConfigMalformedError,
  InstallHookConfigUntrustedError,
  InstallPathUnsafeError,
  InstallUsageError,
  InstallWriteError,
} from './cli/errors.js';
export {
  type CodexHookTrust,
  getHookStatus,
  type HookConfigSetting,
  type HookFileChange,
  type HookInstallOptions,
  type HookInstallResult,
  type HookStatus,
  INSTALL_BACKUP_SUFFIX,
  installHook,
  uninstallHook,
} from './cli/installer.js';
export { type CliEnvironment, type CliWriter, runCli } from './cli/run-cli.js';
// Errors
export {
  HostConfigError,
  type HostConfigErrorClass,
  type HostConfigErrorOptions,
} from './host-config-error.js';
export { VERSION } from './version.js';
