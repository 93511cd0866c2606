import { describe, expect, it } from 'vitest';
import { HandshakeError } from '../client/errors.js';
import { TransportError } from '../transport/errors.js';
import { describeUpstreamFailure, formatUpstreamFailure } from './upstream-failure.js';

describe('describeUpstreamFailure', () => {
  it('keeps the code, the chain of our messages, the exit code and the stderr tail', () => {
    const exited = new TransportError('The MCP server process "npx" exited with code 1', {
      details: {
        exitCode: 1,
        signal: null,
        stderrTail: 'Error: None of the specified directories are accessible',
      },
    });
    const error = new HandshakeError('The MCP handshake failed', { cause: exited });
    const failure = describeUpstreamFailure(error);
    expect(failure).toEqual({
      code: 'CLIENT_HANDSHAKE',
      message: 'The MCP handshake failed: The MCP server process "npx" exited with code 1',
      exitCode: 1,
      stderrTail: 'Error: None of the specified directories are accessible',
    });
    expect(formatUpstreamFailure('fs', failure)).toBe(
      [
        'upstream "fs" failed to start (exit code 1): The MCP handshake failed: The MCP server process "npx" exited with code 1 [CLIENT_HANDSHAKE]',
        '  its last stderr output:',
        '    | Error: None of the specified directories are accessible',
        '',
      ].join('\n'),
    );
  });

  it.each([
    ['a plain Error (its text may be remote)', new Error('token=abc leaked'), 'unknown'],
    ['a string', 'boom', 'unknown'],
    ['undefined', undefined, 'unknown'],
  ])('keeps no message of %s', (_name, error, code) => {
    const failure = describeUpstreamFailure(error);
    expect(failure.code).toBe(code);
    expect(failure.message).toBe('the upstream failed for an unknown reason');
  });

  it('escapes control characters in a name and messages, and stops on a cyclic chain', () => {
    const error = new TransportError('bad\u001b[2Jthing');
    (error as { cause?: unknown }).cause = error;
    const failure = describeUpstreamFailure(error);
    expect(failure.message).toBe('bad\\u{1b}[2Jthing');
    expect(formatUpstreamFailure('a\rb', failure)).toContain('upstream "a\\u{d}b"');
  });
});
