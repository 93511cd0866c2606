import { open } from 'node:fs/promises';
import type jsonc from 'jsonc-parser';
import { GatewayConfigError } from '../gateway/errors.js';
import { shownPath } from '../gateway/shown-path.js';
import { lazyRequire } from '../lazy-require.js';
import { McpBridgeError } from '../mcp-bridge-error.js';

/**
 * jsonc-parser, loaded only to explain a file that is not valid JSON: `serve` reads a valid
 * config with `JSON.parse` and starts without it (issue 41). It is CommonJS (UMD), so it loads
 * synchronously here, the one instance `import` would give.
 */
const loadJsonc = lazyRequire<typeof jsonc>('jsonc-parser');

/** Largest gateway config file (`toolfence.json`) the CLI reads: 1 MiB. */
export const MAX_GATEWAY_CONFIG_BYTES: number = 1024 * 1024;

/**
 * Reads a regular file of at most `maxBytes` for the gateway commands; anything else (a folder,
 * a FIFO, a larger file, a read error) is a {@link GatewayConfigError} that names `what`, the
 * path and the errno, never the file's contents.
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
          `The ${what} ${shownPath(path)} must be a regular file of at most ${maxBytes / (1024 * 1024)} MiB`,
          { details: { at: path } },
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
      `Cannot read the ${what} ${shownPath(path)}${typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : ''}`,
      { cause: error, details: { at: path } },
    );
  }
}

/**
 * Parses strict JSON; invalid JSON is a {@link GatewayConfigError} naming the file, the line and
 * the column (1-based) of the first error and what was wrong there, never the file's contents.
 */
export function parseJsonText(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const parser = loadJsonc();
    const errors: jsonc.ParseError[] = [];
    parser.parse(text, errors, { disallowComments: true, allowTrailingComma: false });
    const first = errors[0];
    let where = '';
    if (first !== undefined) {
      const before = text.slice(0, first.offset);
      const line = before.split('\n').length;
      const column = first.offset - (before.lastIndexOf('\n') + 1) + 1;
      where = ` (line ${line}, column ${column}: ${describeJsonError(parser, first.error)})`;
    }
    throw new GatewayConfigError(`${shownPath(path)}: is not valid JSON${where}`, {
      cause: error,
      details: { at: path },
    });
  }
}

function describeJsonError(parser: typeof jsonc, code: jsonc.ParseErrorCode): string {
  const name = parser.printParseErrorCode(code);
  // "CloseBraceExpected" -> "close brace expected"
  return name.replace(/(?<=[a-z])(?=[A-Z])/g, ' ').toLowerCase();
}
