import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { StdioTransport } from '../src/transport/stdio-transport.js';

const SERVER = fileURLToPath(new URL('./fixtures/fault-stdio-server.mjs', import.meta.url));

/** Every error along the cause chain. */
function chain(error: unknown): (Error & { details?: Record<string, unknown> })[] {
  const errors: (Error & { details?: Record<string, unknown> })[] = [];
  for (let at = error; at instanceof Error; at = (at as { cause?: unknown }).cause) {
    errors.push(at as never);
  }
  return errors;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('starting a stdio server the way MCP configs do', () => {
  it('finds a bare command on PATH with the default environment', async () => {
    const client = new McpClient({ command: ['node', SERVER] });
    try {
      const result = await client.callTool('echo', { text: 'hi' });
      expect(result.isError).not.toBe(true);
    } finally {
      await client.close();
    }
  });

  it('names the command and ENOENT when the executable does not exist', async () => {
    const client = new McpClient({ command: ['toolfence-no-such-command', 'serve'] });
    const error = await failure(client.connect());
    const start = chain(error).find((item) => item.details?.errno === 'ENOENT');
    expect(start?.message).toContain('"toolfence-no-such-command" could not be started');
    expect(start?.message).toContain('ENOENT');
    expect(start?.details).toMatchObject({ command: 'toolfence-no-such-command' });
    await client.close();
  });

  it('reports the exit code and a sanitised, bounded tail of stderr when the server exits', async () => {
    const script = [
      'process.stderr.write("x".repeat(5000) + "\\n");',
      'process.stderr.write("\\u001b[31mError: FOO_API_KEY is not set\\u001b[0m\\u0007\\n");',
      'process.exit(3);',
    ].join('');
    const transport = new StdioTransport({
      command: [process.execPath, '-e', script],
      stderrTailBytes: 100,
    });
    const closed = new Promise<Error>((resolve) => {
      transport.onerror = resolve;
    });
    await transport.start();
    const error = (await closed) as Error & { details?: Record<string, unknown> };
    expect(error.message).toMatch(/exited with code 3/);
    expect(error.details).toMatchObject({ exitCode: 3 });
    const tail = String(error.details?.stderrTail);
    expect(tail.endsWith('Error: FOO_API_KEY is not set')).toBe(true);
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(100);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: checks that none survive
    expect(tail).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    await transport.close();
  });

  it('keeps no stderr tail with stderrTailBytes: 0', async () => {
    const transport = new StdioTransport({
      command: [process.execPath, '-e', 'process.stderr.write("secret\\n"); process.exit(1)'],
      stderrTailBytes: 0,
    });
    const closed = new Promise<Error>((resolve) => {
      transport.onerror = resolve;
    });
    await transport.start();
    const error = (await closed) as Error & { details?: Record<string, unknown> };
    expect(error.details).not.toHaveProperty('stderrTail');
    await transport.close();
  });

  it.each([
    ['inheritEnv as a string', { inheritEnv: 'PATH' }],
    ['a negative stderrTailBytes', { stderrTailBytes: -1 }],
  ])('refuses %s', (_label, options) => {
    expect(() => new StdioTransport({ command: ['node'], ...(options as object) })).toThrow(
      /inheritEnv|stderrTailBytes/,
    );
  });
});
