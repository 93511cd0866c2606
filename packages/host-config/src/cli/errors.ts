import { HostConfigError } from '../host-config-error.js';

/** A client config file exists but is not a JSON object of the expected shape; nothing was written. */
export class InstallConfigMalformedError extends HostConfigError {
  static override readonly code: string = 'INSTALL_CONFIG_MALFORMED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/InstallConfigMalformedError',
  );
}

/** Writing the script, a config file or its backup failed; the original file is left in place. */
export class InstallWriteError extends HostConfigError {
  static override readonly code: string = 'INSTALL_WRITE_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/host-config/InstallWriteError');
}

/** The installer was called with an unknown client, scope, command or option. */
export class InstallUsageError extends HostConfigError {
  static override readonly code: string = 'INSTALL_USAGE_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/host-config/InstallUsageError');
}
