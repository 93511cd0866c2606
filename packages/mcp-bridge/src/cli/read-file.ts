import { open } from 'node:fs/promises';
import { GatewayConfigError } from '../gateway/errors.js';
import { McpBridgeError } from '../mcp-bridge-error.js';

/** Largest gateway config file (`toolfence.json`) the CLI reads: 1 MiB. */
export const MAX_GATEWAY_CONFIG_BYTES: number = 1024 * 1024;

/**
 * Reads a regular file of at most `maxBytes` for the gateway commands; anything else (a folder,
 * a FIFO, a larger file, a read error) is a {@link GatewayConfigError} that names `what` and the
 * errno, never the path's contents.
 */
export async function readRegularFile(
  path: string,
  what: string,
  maxBytes: number,
): Promise<Buffer> {
  try {
    const handle = await open(path, 'r');
    try {
      const info = await handle.stat();
      if (!info.isFile() || info.size > maxBytes) {
        throw new GatewayConfigError(
          `The ${what} must be a regular file of at most ${maxBytes / (1024 * 1024)} MiB`,
        );
      }
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (McpBridgeError.isInstance(error)) throw error;
    const code = (error as { code?: unknown }).code;
    throw new GatewayConfigError(
      `Cannot read the ${what}${typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : ''}`,
      { cause: error },
    );
  }
}
