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

/**
 * At project scope, a file install (or uninstall) would write, back up or delete, or an
 * `--allow` root, leads through a symlink out of the project's real path (a cloned repository's
 * link to the user's own config, or to a folder elsewhere); nothing was written.
 */
export class InstallPathUnsafeError extends HostConfigError {
  static override readonly code: string = 'INSTALL_PATH_UNSAFE';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/InstallPathUnsafeError',
  );
}

/**
 * At project scope, the hook config file already beside the script (one install did not write,
 * such as a repository's) makes the hook read more than by default (`denyCredentialFiles: false`,
 * a raised limit, a shorter quiet time); install does not adopt it without `acceptHookConfig`.
 * Nothing was written.
 */
export class InstallHookConfigUntrustedError extends HostConfigError {
  static override readonly code: string = 'INSTALL_HOOK_CONFIG_UNTRUSTED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/host-config/InstallHookConfigUntrustedError',
  );
}
