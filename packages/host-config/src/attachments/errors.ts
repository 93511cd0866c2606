import { HostConfigError } from '../host-config-error.js';

/** A `data:` attachment source is malformed: not a data URI, not base64, or not strict base64. */
export class AttachmentDataInvalidError extends HostConfigError {
  static override readonly code: string = 'ATTACHMENT_DATA_INVALID';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/AttachmentDataInvalidError',
  );
}

/** A decoded attachment is larger than the allowed number of bytes. */
export class AttachmentTooLargeError extends HostConfigError {
  static override readonly code: string = 'ATTACHMENT_TOO_LARGE';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/AttachmentTooLargeError',
  );
}

/** An option passed to an attachment helper is invalid (wrong type or out of range). */
export class AttachmentOptionError extends HostConfigError {
  static override readonly code: string = 'ATTACHMENT_OPTION_INVALID';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/AttachmentOptionError',
  );
}

/** An option passed to `buildMissingHookPayload` is missing or invalid. */
export class HookPayloadOptionError extends HostConfigError {
  static override readonly code: string = 'HOOK_PAYLOAD_OPTION_INVALID';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/HookPayloadOptionError',
  );
}
