// Red-team findings on the hook, one describe each: private keys in any PEM or DER form, a hard
// link to a known credential file, a hook config that is a dangling link, what the deny codes say
// about files outside the allowlist, and a reader that closes stdout early. Real files, links and
// processes in a temporary folder.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { copyFile, link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_CONFIG_FILENAME, HOOK_SCRIPT_FILENAME } from '../src/index.js';
import { fileUrl, HOOK_PATH, runHook, stdinFor } from './support/run-hook.js';

const POSIX = process.platform !== 'win32';
const OPENSSL = spawnSync('openssl', ['version']).status === 0;

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-hook-hardening-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function attach(file: string, env: Record<string, string> = {}, script?: string) {
  const result = await runHook(stdinFor('claude-code', { attachment: { source: fileUrl(file) } }), {
    env,
    ...(script === undefined ? {} : { script }),
  });
  return JSON.parse(result.stdout).hookSpecificOutput as {
    permissionDecision?: string;
    permissionDecisionReason?: string;
    updatedInput?: { attachment: { source: string } };
  };
}

function openssl(...args: string[]): void {
  const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${result.stderr}`);
}

describe('private keys are recognised anywhere in the bytes, PEM or DER', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const ed = generateKeyPairSync('ed25519');
  const pkcs8Pem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const files: Record<string, string | Buffer | (() => Promise<void>)> = {
    'ec-params-first.txt': async () => {
      // `openssl ecparam -genkey` writes an EC PARAMETERS block before the key.
      openssl('ecparam', '-name', 'prime256v1', '-genkey', '-out', 'ec-params-first.txt');
    },
    'bundle.txt': async () => {
      openssl(
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'],
        ...['-nodes', '-keyout', 'bundle-key.tmp', '-out', 'bundle-cert.tmp', '-subj', '/CN=t'],
        ...['-days', '1'],
      );
      const cert = await readFile(join(dir, 'bundle-cert.tmp'), 'utf8');
      const key = await readFile(join(dir, 'bundle-key.tmp'), 'utf8');
      await writeFile(join(dir, 'bundle.txt'), cert + key);
      await writeFile(join(dir, 'cert-only.txt'), cert);
      openssl('x509', '-in', 'bundle-cert.tmp', '-outform', 'DER', '-out', 'cert.der');
      openssl(
        ...['pkcs12', '-export', '-in', 'bundle-cert.tmp', '-inkey', 'bundle-key.tmp'],
        ...['-out', 'store.bin', '-passout', 'pass:t'],
      );
      // What `openssl pkcs12 -in` prints: "Bag Attributes" lines before each PEM block.
      openssl('pkcs12', '-in', 'store.bin', '-nodes', '-passin', 'pass:t', '-out', 'bag.txt');
      await copyFile(join(dir, 'store.bin'), join(dir, 'store.p12'));
      await copyFile(join(dir, 'cert-only.txt'), join(dir, 'renamed.pfx'));
    },
    'bom.txt': `\uFEFF${pkcs8Pem}`,
    'crlf.txt': pkcs8Pem.replace(/\n/g, '\r\n'),
    'pkcs8.der': ec.privateKey.export({ type: 'pkcs8', format: 'der' }) as Buffer,
    'pkcs8-ed25519.bin': ed.privateKey.export({ type: 'pkcs8', format: 'der' }) as Buffer,
    'pkcs1.bin': rsa.privateKey.export({ type: 'pkcs1', format: 'der' }) as Buffer,
    'sec1.bin': ec.privateKey.export({ type: 'sec1', format: 'der' }) as Buffer,
    'encrypted.bin': rsa.privateKey.export({
      type: 'pkcs8',
      format: 'der',
      cipher: 'aes-256-cbc',
      passphrase: 't',
    }) as Buffer,
    'public.der': ec.publicKey.export({ type: 'spki', format: 'der' }) as Buffer,
    'random.bin': Buffer.concat([
      Buffer.from([0x30, 0x82, 0x01, 0x00, 0x02, 0x01, 0x00]),
      randomBytes(300),
    ]),
    'quote.txt': 'notes\n  the line -----BEGIN PRIVATE KEY----- is quoted here, not a key\n',
  };

  beforeAll(async () => {
    for (const [name, content] of Object.entries(files)) {
      if (typeof content === 'function') {
        if (OPENSSL) await content();
      } else await writeFile(join(dir, name), content);
    }
  });

  it.each([
    [
      'an EC key with its EC PARAMETERS block first (openssl ecparam -genkey)',
      'ec-params-first.txt',
      OPENSSL,
    ],
    ['a certificate followed by its key (a PEM bundle)', 'bundle.txt', OPENSSL],
    ['"Bag Attributes" PEM from a PKCS#12 export', 'bag.txt', OPENSSL],
    ['a PEM key after a UTF-8 byte order mark', 'bom.txt', true],
    ['a PEM key with CRLF line ends', 'crlf.txt', true],
    ['a DER PKCS#8 key', 'pkcs8.der', true],
    ['a DER PKCS#8 Ed25519 key', 'pkcs8-ed25519.bin', true],
    ['a DER PKCS#1 RSA key', 'pkcs1.bin', true],
    ['a DER SEC1 EC key', 'sec1.bin', true],
    ['a DER encrypted PKCS#8 key', 'encrypted.bin', true],
    ['a PKCS#12 store under an innocent name', 'store.bin', OPENSSL],
    ['a .p12 file', 'store.p12', OPENSSL],
    ['a .pfx file, whatever it holds', 'renamed.pfx', OPENSSL],
  ])('refuses %s', async (_name, file, when) => {
    if (!when) return;
    const output = await attach(join(dir, file));
    expect(output.permissionDecision).toBe('deny');
    expect(output.permissionDecisionReason).toContain(': HOOK_CREDENTIAL_FILE_DENIED: ');
  });

  it.each([
    ['a certificate alone', 'cert-only.txt', OPENSSL],
    ['a DER public key', 'public.der', true],
    ['a DER certificate', 'cert.der', OPENSSL],
    ['binary bytes that start like a DER key but are not one', 'random.bin', true],
    ['a text quoting a key header inside a line', 'quote.txt', true],
  ])('still reads %s', async (_name, file, when) => {
    if (!when) return;
    const output = await attach(join(dir, file));
    expect(output.updatedInput?.attachment.source).toMatch(/^data:[^;]+;base64,/);
  });
});

describe.runIf(POSIX)('a hard link to a known credential file', () => {
  it('is refused under any name, found by its device and inode', async () => {
    const home = join(dir, 'home-hard-link');
    await mkdir(join(home, '.aws'), { recursive: true });
    await writeFile(join(home, '.aws', 'credentials'), 'aws_secret_access_key = do-not-send-me\n');
    await mkdir(join(dir, 'elsewhere'), { recursive: true });
    const linked = join(dir, 'elsewhere', 'notes.txt');
    await link(join(home, '.aws', 'credentials'), linked);
    const output = await attach(linked, { HOME: home });
    expect(output.permissionDecisionReason).toContain(': HOOK_CREDENTIAL_FILE_DENIED: ');
  });

  it('reads an ordinary file that has another hard link', async () => {
    const home = join(dir, 'home-plain');
    await mkdir(home, { recursive: true });
    const file = join(dir, 'elsewhere-plain.txt');
    await writeFile(file, 'plain text\n');
    await link(file, join(dir, 'elsewhere-plain-2.txt'));
    const output = await attach(file, { HOME: home });
    expect(output.updatedInput?.attachment.source).toMatch(/^data:text\/plain;base64,/);
  });
});

describe.runIf(POSIX)('a hook config that is there but cannot be read', () => {
  it('a dangling symlink as the config beside the script denies every rewrite', async () => {
    const hooks = join(dir, 'dangling-config');
    await mkdir(hooks, { recursive: true });
    const script = join(hooks, HOOK_SCRIPT_FILENAME);
    await copyFile(HOOK_PATH, script);
    await symlink(join(dir, 'no-such-config.json'), join(hooks, HOOK_CONFIG_FILENAME));
    const file = join(dir, 'plain.txt');
    await writeFile(file, 'plain\n');
    const output = await attach(file, {}, script);
    expect(output.permissionDecisionReason).toContain(': HOOK_CONFIG_INVALID: ');
  });
});

describe('with an allowlist, files outside it are refused before they are looked at', () => {
  it('answers HOOK_PATH_NOT_ALLOWED for a missing file outside every root, like an existing one', async () => {
    const allowed = join(dir, 'allowed-root');
    await mkdir(allowed, { recursive: true });
    const existing = join(dir, 'outside-existing.txt');
    await writeFile(existing, 'x');
    const env = { TOOLFENCE_HOOK_ALLOWED_ROOTS: allowed };
    for (const file of [existing, join(dir, 'outside-missing.txt'), join(dir, 'no-dir', 'x')]) {
      const output = await attach(file, env);
      expect(output.permissionDecisionReason).toContain(': HOOK_PATH_NOT_ALLOWED: ');
    }
    const inside = await attach(join(allowed, 'missing.txt'), env);
    expect(inside.permissionDecisionReason).toContain(': HOOK_FILE_NOT_FOUND: ');
  });

  it.runIf(POSIX)(
    'reads a file named through a root given as a symlink, and through its real path',
    async () => {
      const real = join(dir, 'real-root');
      await mkdir(real, { recursive: true });
      await writeFile(join(real, 'a.txt'), 'a\n');
      const alias = join(dir, 'alias-root');
      await symlink(real, alias);
      for (const file of [join(alias, 'a.txt'), join(real, 'a.txt')]) {
        const output = await attach(file, { TOOLFENCE_HOOK_ALLOWED_ROOTS: alias });
        expect(output.updatedInput?.attachment.source).toBe(
          `data:text/plain;base64,${Buffer.from('a\n').toString('base64')}`,
        );
      }
    },
  );

  it.runIf(POSIX)('still refuses a link inside a root that leads out of it', async () => {
    const root = join(dir, 'root-with-link');
    await mkdir(root, { recursive: true });
    const outside = join(dir, 'outside-target.txt');
    await writeFile(outside, 'x');
    await symlink(outside, join(root, 'out.txt'));
    const output = await attach(join(root, 'out.txt'), { TOOLFENCE_HOOK_ALLOWED_ROOTS: root });
    expect(output.permissionDecisionReason).toContain(': HOOK_PATH_NOT_ALLOWED: ');
  });
});

describe.runIf(POSIX)('a reader that closes stdout early', () => {
  it('ends the hook quietly with exit code 2 (no crash, no stack trace)', async () => {
    const file = join(dir, 'big-for-epipe.bin');
    await writeFile(file, randomBytes(12 * 1024 * 1024));
    const child = spawn(process.execPath, [HOOK_PATH], { stdio: ['pipe', 'pipe', 'pipe'] });
    const stderr: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdout.once('data', () => child.stdout.destroy());
    child.stdin.end(stdinFor('claude-code', { attachment: { source: fileUrl(file) } }));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(Buffer.concat(stderr).toString('utf8')).toBe('');
    expect(code).toBe(2);
  });
});
