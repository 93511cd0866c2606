import { isAbsolute, resolve } from 'node:path';
import { GatewayConfigError } from '../gateway/errors.js';
import { McpBridgeError } from '../mcp-bridge-error.js';
import type { CliIo } from './cli-io.js';
import { defaultInspectPolicy, type InspectPolicy, loadInspectPolicy } from './inspect-policy.js';
import { shownPath } from './read-file.js';

/**
 * The policy of `serve` (and of what `wrap` writes): `--policy FILE`, or RiskPolicy's defaults.
 * A file that cannot be read or used is a {@link GatewayConfigError} with the code
 * `GATEWAY_POLICY` naming the file (not `inspect`'s usage code).
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
    const message = McpBridgeError.isInstance(error) ? error.message : 'cannot be used';
    throw new GatewayConfigError(`--policy ${shownPath(path)}: ${message}`, {
      code: 'GATEWAY_POLICY',
      cause: McpBridgeError.isInstance(error) ? error.cause : error,
      details: { at: path },
    });
  }
}
