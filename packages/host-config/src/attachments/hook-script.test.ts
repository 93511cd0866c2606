import { readFileSync } from 'node:fs';
import { type Comment, parse } from 'acorn';
import { describe, expect, it } from 'vitest';
import {
  HOOK_DENY_CODES,
  HOOK_ENVIRONMENT,
  HOOK_PROTOCOL_VERSION,
  HOOK_SCRIPT,
  HOOK_SCRIPT_FILENAME,
  HOOK_SCRIPT_URL,
  HOOK_SETTLE_MS,
  LEGACY_HOOK_SCRIPT_FILENAMES,
  MAX_BYTES,
  MAX_HOOK_ATTACHMENTS,
  MAX_HOOK_ATTACHMENTS_CEILING,
  MAX_HOOK_DEPTH,
  MAX_HOOK_DEPTH_CEILING,
  MAX_HOOK_INPUT_BYTES,
  MAX_TOTAL_BYTES,
  readHookProtocolVersion,
} from './hook-script.js';

describe('HOOK_SCRIPT', () => {
  it('is the text of the shipped file', () => {
    expect(HOOK_SCRIPT).toBe(readFileSync(HOOK_SCRIPT_URL, 'utf8'));
    expect(HOOK_SCRIPT_URL.pathname.endsWith(`/hook/${HOOK_SCRIPT_FILENAME}`)).toBe(true);
  });

  it('uses the stable filename, a CommonJS file', () => {
    expect(HOOK_SCRIPT_FILENAME).toBe('toolfence_attachment_substitution.cjs');
    expect(LEGACY_HOOK_SCRIPT_FILENAMES).toEqual(['toolfence_attachment_substitution.mjs']);
  });

  // Node 18.0 ships V8 10.1, which implements all of ES2022 (class fields, `.at()`,
  // Object.hasOwn, error cause); nothing newer may slip in. As a script: no import or export,
  // no top-level await, no import.meta (any of them would need the ESM loader).
  it('parses as an ES2022 script, the newest syntax every Node 18 release runs', () => {
    const comments: Comment[] = [];
    expect(() =>
      parse(HOOK_SCRIPT, {
        ecmaVersion: 2022,
        sourceType: 'script',
        allowHashBang: false,
        onComment: comments,
      }),
    ).not.toThrow();
    // JSDoc types may say import('node:fs'); the code itself never imports.
    let code = HOOK_SCRIPT;
    for (const comment of [...comments].reverse()) {
      code = code.slice(0, comment.start) + code.slice(comment.end);
    }
    expect(code).not.toMatch(/\bimport\b/);
    expect(code).not.toMatch(/\bexport\b/);
  });

  it('runs in strict mode: the directive comes before any statement', () => {
    const code = HOOK_SCRIPT.split('\n').filter((line) => line !== '' && !line.startsWith('//'));
    expect(code[0]).toBe("'use strict';");
  });

  it('calls no runtime API that Node 18 lacks', () => {
    const newer = [
      /\.toSorted\(/,
      /\.toReversed\(/,
      /\.toSpliced\(/,
      /\.with\(/,
      /\.findLast(Index)?\(/,
      /Array\.fromAsync/,
      /Promise\.withResolvers/,
      /Object\.groupBy/,
      /Map\.groupBy/,
      /isWellFormed/,
      /\bnode:sqlite\b/,
      /getBuiltinModule/,
    ];
    for (const pattern of newer) expect(HOOK_SCRIPT).not.toMatch(pattern);
  });

  it('never calls process.exit, so a large answer drains before the process ends', () => {
    expect(HOOK_SCRIPT).not.toMatch(/process\.exit\(/);
    expect(HOOK_SCRIPT).not.toMatch(/console\./);
  });

  // Both are loaded by Node's own start-up, so requiring them adds no module to load.
  it('requires only node:fs and node:path, once each, at the top', () => {
    const required = [...HOOK_SCRIPT.matchAll(/\brequire\(([^)]*)\)/g)].map((m) => m[1]);
    expect(required).toEqual(["'node:fs'", "'node:path'"]);
    expect(HOOK_SCRIPT).toContain(
      "\nconst fs = require('node:fs');\nconst path = require('node:path');\n",
    );
  });

  it('stamps protocol=N in its first line', () => {
    expect(HOOK_SCRIPT.split('\n')[0]).toBe(
      `// toolfence attachment substitution hook. protocol=${HOOK_PROTOCOL_VERSION}`,
    );
    expect(HOOK_PROTOCOL_VERSION).toBe(1);
    expect(readHookProtocolVersion('// no version here')).toBeUndefined();
  });

  it('has the same limits as the exported constants', () => {
    const constant = (name: string) =>
      Number(new RegExp(`^const ${name} = (\\d+);$`, 'm').exec(HOOK_SCRIPT)?.[1]);
    expect(constant('MAX_BYTES')).toBe(MAX_BYTES);
    expect(constant('MAX_TOTAL_BYTES')).toBe(MAX_TOTAL_BYTES);
    expect(constant('MAX_INPUT_BYTES')).toBe(MAX_HOOK_INPUT_BYTES);
    expect(constant('MAX_DEPTH')).toBe(MAX_HOOK_DEPTH);
    expect(constant('DEPTH_CEILING')).toBe(MAX_HOOK_DEPTH_CEILING);
    expect(constant('MAX_ATTACHMENTS')).toBe(MAX_HOOK_ATTACHMENTS);
    expect(constant('ATTACHMENTS_CEILING')).toBe(MAX_HOOK_ATTACHMENTS_CEILING);
    expect(constant('SETTLE_MS')).toBe(HOOK_SETTLE_MS);
    expect(MAX_BYTES).toBe(25 * 1024 * 1024);
  });

  it('reads exactly the documented environment variables', () => {
    const used = new Set(
      [...HOOK_SCRIPT.matchAll(/\b(TOOLFENCE_HOOK_[A-Z_]+)\b/g)].map((m) => m[1]),
    );
    expect([...used].sort()).toEqual(Object.values(HOOK_ENVIRONMENT).sort());
  });

  it('emits exactly the documented deny codes', () => {
    const used = new Set([...HOOK_SCRIPT.matchAll(/'(HOOK_[A-Z_]+)'/g)].map((m) => m[1]));
    used.add('HOOK_INPUT_TOO_LARGE');
    used.delete('HOOK_CONFIG_INVALID');
    used.add('HOOK_CONFIG_INVALID');
    expect([...used].sort()).toEqual([...HOOK_DENY_CODES].sort());
  });
});
