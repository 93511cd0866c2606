import { isAbsolute, resolve } from 'node:path';
import {
  defaultInspectPolicy,
  type InspectPolicy,
  loadInspectPolicy,
} from '../gateway/policy-file.js';
import { PolicyFileError } from '../gateway/policy-file-error.js';
import type { CliIo } from './cli-io.js';
import { shownPath } from './read-file.js';

/**
 * The policy of `serve` (and of what `wrap` writes): `--policy FILE`, or RiskPolicy's defaults.
 * A file that cannot be read or used is a {@link PolicyFileError} (`POLICY_FILE_INVALID`, the
 * same code `inspect` gives) whose message starts with the file's path.
 */
export async function readServePolicy(
  policy: string | undefined,
  io: CliIo,
): Promise<InspectPolicy> {
  if (policy === undefined) return defaultInspectPolicy();
  const path = isAbsolute(policy) ? policy : resolve(io.cwd ?? process.cwd(), policy);
  try {
    return await loadInspectPolicy(path);
  } catch (error) {
    if (!PolicyFileError.isInstance(error)) throw error;
    throw new PolicyFileError(`--policy ${shownPath(path)}: ${error.message}`, {
      cause: error.cause,
      details: { ...error.details, file: path },
    });
  }
}
