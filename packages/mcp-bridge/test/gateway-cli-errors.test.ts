import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-cli-errors-'));
});
afterEach(async () => {
  await chmod(folder, 0o700).catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: {},
    cwd: folder,
    stdio: { stdin: new PassThrough(), stdout: new PassThrough() },
    stopped: Promise.resolve(),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('serve and pin: errors that say where and why (issue 36, smaller)', () => {
  it.each([
    [
      'a missing comma',
      '{\n  "mcpServers": {}\n  "gateway": {}\n}',
      'line 3, column 3: comma expected',
    ],
    ['a trailing comma', '{\n  "mcpServers": {},\n}', 'line 3, column 1: property name expected'],
    ['an empty file', '', 'line 1, column 1: value expected'],
    ['a comment', '// servers\n{"mcpServers": {}}', 'line 1, column 1: invalid comment token'],
  ])(
    'a config file with %s names the file, the line and the column',
    async (_label, text, where) => {
      const path = join(folder, 'toolfence.json');
      await writeFile(path, text);
      for (const command of [['serve'], ['pin', '--show']]) {
        const result = await cli([...command, '--config', path]);
        expect(result.code).toBe(1);
        expect(result.err).toContain(`${path}: is not valid JSON (${where})`);
        expect(result.err).toContain('(GATEWAY_CONFIG)');
      }
    },
  );

  type Arrange = (path: string) => Promise<void>;
  const unreadable: [string, Arrange, string][] =
    process.getuid?.() === 0
      ? []
      : [
          [
            'unreadable',
            async (path) => {
              await writeFile(path, '{}');
              await chmod(path, 0o000);
            },
            'EACCES',
          ],
        ];
  const rows: [string, Arrange, string][] = [
    ['missing', async () => undefined, 'ENOENT'],
    ...unreadable,
  ];
  it.each(rows)('a %s config file names its path', async (_label, arrange, errno) => {
    const path = join(folder, 'toolfence.json');
    await arrange(path);
    const result = await cli(['serve', '--config', path]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`Cannot read the config file ${path} (${errno})`);
  });

  it.each([
    ['a policy file that is not JSON', 'not json', 'not valid JSON'],
    ['a policy of an unknown kind', '{"kind":"nope"}', '"kind" must be'],
  ])("serve refuses %s with its own code and the file's path", async (_label, policy, message) => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    await writeFile(join(folder, 'policy.json'), policy);
    const result = await cli(['serve', '--config', 'toolfence.json', '--policy', 'policy.json']);
    expect(result.code).toBe(1);
    expect(result.err).toContain('(POLICY_FILE_INVALID)');
    expect(result.err).not.toContain('INSPECT_USAGE');
    expect(result.err).toContain(join(folder, 'policy.json'));
    expect(result.err).toContain(message);
  });

  it('serve refuses a missing policy file naming it', async () => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    const result = await cli(['serve', '--config', 'toolfence.json', '--policy', 'nope.json']);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`--policy ${join(folder, 'nope.json')}`);
    expect(result.err).toContain('(POLICY_FILE_INVALID)');
  });

  it.each([
    ['--observe', '{"mcpServers":{}}', ['--observe']],
    ['gateway.observe in the config', '{"mcpServers":{},"gateway":{"observe":true}}', []],
  ])(
    'serve with %s prints a banner on stderr saying enforcement is off',
    async (_label, config, flags) => {
      await writeFile(join(folder, 'toolfence.json'), config);
      const result = await cli(['serve', '--config', 'toolfence.json', ...flags]);
      expect(result.code).toBe(0);
      expect(result.err).toContain('OBSERVE MODE: enforcement is OFF');
    },
  );

  it('serve without observe prints no such banner', async () => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    const result = await cli(['serve', '--config', 'toolfence.json']);
    expect(result.code).toBe(0);
    expect(result.err).not.toContain('OBSERVE');
  });
});
