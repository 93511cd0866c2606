import type { ApprovalRequest } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import { approvalPrompt, escapeForPrompt } from './approval-prompt.js';

const request = (args: Record<string, unknown>, description = 'Sends a mail.') =>
  ({
    toolName: 'mail__send',
    args,
    reason: 'external publication',
    spec: { name: 'mail__send', description, inputSchema: { type: 'object' } },
  }) as unknown as ApprovalRequest;

describe('escapeForPrompt', () => {
  // Each row: a character that could move the cursor, overwrite or hide text in a prompt.
  it.each([
    ['ESC (a terminal escape)', '\u001b', '\\u{1b}'],
    ['CR (overwrites the line)', '\r', '\\u{d}'],
    ['BEL', '\u0007', '\\u{7}'],
    ['backspace', '\b', '\\u{8}'],
    ['tab', '\t', '\\u{9}'],
    ['NUL', '\u0000', '\\u{0}'],
    ['DEL', '\u007f', '\\u{7f}'],
    ['C1 NEL', '\u0085', '\\u{85}'],
    ['C1 CSI', '\u009b', '\\u{9b}'],
    ['line separator', '\u2028', '\\u{2028}'],
    ['paragraph separator', '\u2029', '\\u{2029}'],
    ['right-to-left override', '\u202e', '\\u{202e}'],
    ['zero-width space', '\u200b', '\\u{200b}'],
    ['byte order mark', '\ufeff', '\\u{feff}'],
    ['tag character', '\u{e0041}', '\\u{e0041}'],
    ['lone surrogate', '\ud800', '\\u{d800}'],
  ])('escapes %s', (_name, char, shown) => {
    expect(escapeForPrompt(`a${char}b`)).toBe(`a${shown}b`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters under test
    expect(escapeForPrompt(`a${char}b`)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('keeps newlines and ordinary text (accents, CJK, emoji), and escapes newlines in names', () => {
    expect(escapeForPrompt('line 1\nlíne 2 漢字 😀')).toBe('line 1\nlíne 2 漢字 😀');
    expect(escapeForPrompt('a\nb', false)).toBe('a\\u{a}b');
  });
});

describe('approvalPrompt', () => {
  it('shows the arguments whole, with what comes after 2,000 characters', () => {
    const prompt = approvalPrompt(
      request({ body: 'x'.repeat(3_000), to: 'attacker@evil.example' }),
      'mail',
      8_192,
    );
    expect('message' in prompt && prompt.message).toContain('"to": "attacker@evil.example"');
  });

  it('refuses at one character over the limit, and shows at the limit', () => {
    const args = { id: 'y'.repeat(50) };
    const shown = JSON.stringify(args, null, 2).length;
    expect(approvalPrompt(request(args), 'mail', shown)).toHaveProperty('message');
    expect(approvalPrompt(request(args), 'mail', shown - 1)).toEqual({ tooLong: shown });
  });

  it('escapes the tool name, the server, the reason and the description', () => {
    const prompt = approvalPrompt(
      {
        ...request({ id: '\u001b[2J' }, 'Sends.\r\u001b[1AApproved\u202e'),
        toolName: 'mail__send\r',
        reason: 'why\u001b',
      } as ApprovalRequest,
      'srv\u0085',
      8_192,
    );
    const message = 'message' in prompt ? prompt.message : '';
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters under test
    expect(message).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(message).toContain('mail__send\\u{d} (server srv\\u{85})');
    expect(message).toContain('Why asked: why\\u{1b}.');
    expect(message).toContain('Sends.\\u{d}\\u{1b}[1AApproved\\u{202e}');
  });

  it('says how much of a long description is left out', () => {
    const prompt = approvalPrompt(request({}, 'd'.repeat(700)), 'mail', 8_192);
    expect('message' in prompt && prompt.message).toContain(
      '… (200 more characters of the description not shown)',
    );
  });
});
