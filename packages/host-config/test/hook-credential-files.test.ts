import { existsSync } from 'node:fs';
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

// The default-deny list of well-known credential locations: one named row per attempt to reach
// one, and the files it must still read. Defence in depth, not a boundary (see the README).

const SECRET = 'aws_secret_access_key = do-not-send-me\n';
const KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
const POSIX = process.platform !== 'win32';
const LINUX = process.platform === 'linux';

let home: string;

async function put(relative: string, text: string): Promise<void> {
  const file = join(home, relative);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, text);
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolfence-credentials-'));
  await put('.ssh/id_ed25519', KEY);
  await put('.ssh/config', 'Host *\n');
  await put('.aws/credentials', SECRET);
  await put('.gnupg/private-keys-v1.d/ABCD.key', SECRET);
  await put('.config/gcloud/application_default_credentials.json', SECRET);
  await put('.azure/msal_token_cache.json', SECRET);
  await put('.kube/config', SECRET);
  await put('.docker/config.json', SECRET);
  await put('.npmrc', '//registry.npmjs.org/:_authToken=do-not-send-me\n');
  await put('.pypirc', SECRET);
  await put('.netrc', SECRET);
  await put('.git-credentials', SECRET);
  await put('project/.env', 'TOKEN=do-not-send-me\n');
  await put('project/.env.local', 'TOKEN=do-not-send-me\n');
  await put('project/.env.example', 'TOKEN=\n');
  await put(
    'keys/server.pem',
    '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n',
  );
  await put('keys/id_ed25519.pub', 'ssh-ed25519 AAAA user@host\n');
  await put(
    'docs/report.txt',
    'A report that quotes -----BEGIN RSA PRIVATE KEY----- in its text.\n',
  );
  await put('docs/id_card.txt', 'not a key\n');
  await put('docs/.ssh.txt', 'notes about ssh\n');
  await put('dotfiles/npmrc', 'registry=https://registry.npmjs.org/\n');
  await put('.SSH/id_rsa', KEY);
  // The supported clients' own token stores.
  await put('.claude/.credentials.json', SECRET);
  await put('.claude.json', SECRET);
  await put('.codex/auth.json', SECRET);
  await put('.codex/config.toml', SECRET);
  await put('.cursor/mcp.json', SECRET);
  await put('.config/github-copilot/apps.json', SECRET);
  await put('.config/github-copilot/hosts.json', SECRET);
  await put('project/.envrc', 'export TOKEN=do-not-send-me\n');
  await put('project/auth.json', '{"note":"not a client token store"}\n');
  await put('project/config.toml', 'name = "x"\n');
  await put('project/mcp.json', '{}\n');
  if (!POSIX) return;
  await symlink(join(home, '.aws', 'credentials'), join(home, 'docs', 'innocent.txt'));
  await symlink(join(home, '.ssh'), join(home, 'docs', 'folder-link'));
  await mkdir(join(home, 'linked'));
  await symlink(join(home, 'dotfiles', 'npmrc'), join(home, 'linked', '.npmrc'));
  await link(join(home, '.ssh', 'id_ed25519'), join(home, 'docs', 'holiday.jpg'));
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

const at = (relative: string): string => fileUrl(join(home, relative));

interface Row {
  readonly name: string;
  readonly source: () => string;
  readonly when?: boolean;
}

const refused: Row[] = [
  { name: 'an SSH private key in ~/.ssh', source: () => at('.ssh/id_ed25519') },
  { name: 'any file in ~/.ssh (config)', source: () => at('.ssh/config') },
  { name: '~/.aws/credentials', source: () => at('.aws/credentials') },
  { name: 'a key in ~/.gnupg', source: () => at('.gnupg/private-keys-v1.d/ABCD.key') },
  {
    name: '~/.config/gcloud credentials',
    source: () => at('.config/gcloud/application_default_credentials.json'),
  },
  { name: 'a token cache in ~/.azure', source: () => at('.azure/msal_token_cache.json') },
  { name: '~/.kube/config', source: () => at('.kube/config') },
  { name: '~/.docker/config.json', source: () => at('.docker/config.json') },
  { name: '~/.npmrc', source: () => at('.npmrc') },
  { name: '~/.pypirc', source: () => at('.pypirc') },
  { name: '~/.netrc', source: () => at('.netrc') },
  { name: '~/.git-credentials', source: () => at('.git-credentials') },
  { name: 'a .env file in a project', source: () => at('project/.env') },
  { name: 'a .env.local file in a project', source: () => at('project/.env.local') },
  { name: 'a PEM private key under another name', source: () => at('keys/server.pem') },
  { name: 'a path through ..', source: () => `file://${home}/docs/../.ssh/id_ed25519` },
  { name: 'a percent-encoded dot (%2Essh)', source: () => `file://${home}/%2Essh/id_ed25519` },
  { name: 'doubled slashes', source: () => `file://${home}//.ssh//id_ed25519` },
  { name: 'another letter case (.SSH/id_rsa)', source: () => at('.SSH/id_rsa') },
  {
    name: "Claude Code's ~/.claude/.credentials.json",
    source: () => at('.claude/.credentials.json'),
  },
  { name: "Claude Code's ~/.claude.json", source: () => at('.claude.json') },
  { name: "Codex's ~/.codex/auth.json", source: () => at('.codex/auth.json') },
  { name: "Codex's ~/.codex/config.toml", source: () => at('.codex/config.toml') },
  { name: "Cursor's ~/.cursor/mcp.json", source: () => at('.cursor/mcp.json') },
  {
    name: "GitHub Copilot's ~/.config/github-copilot/apps.json",
    source: () => at('.config/github-copilot/apps.json'),
  },
  {
    name: "GitHub Copilot's ~/.config/github-copilot/hosts.json",
    source: () => at('.config/github-copilot/hosts.json'),
  },
  { name: "direnv's .envrc", source: () => at('project/.envrc') },
  {
    name: 'an innocent name that is a symlink to ~/.aws/credentials',
    source: () => at('docs/innocent.txt'),
    when: POSIX,
  },
  {
    name: 'a symlinked folder that leads into ~/.ssh',
    source: () => at('docs/folder-link/id_ed25519'),
    when: POSIX,
  },
  {
    name: 'a .npmrc that is a symlink to an innocent file',
    source: () => at('linked/.npmrc'),
    when: POSIX,
  },
  {
    name: 'a hard link to a private key under an innocent name',
    source: () => at('docs/holiday.jpg'),
    when: POSIX,
  },
  { name: '/etc/shadow', source: () => 'file:///etc/shadow', when: existsSync('/etc/shadow') },
  {
    name: '/etc/shadow through /proc/self/root',
    source: () => 'file:///proc/self/root/etc/shadow',
    when: LINUX && existsSync('/etc/shadow'),
  },
  {
    name: '/etc/shadow through /proc/self/root and ..',
    source: () => 'file:///proc/self/root/tmp/../etc/shadow',
    when: LINUX && existsSync('/etc/shadow'),
  },
  { name: '/etc/sudoers', source: () => 'file:///etc/sudoers', when: existsSync('/etc/sudoers') },
  {
    name: "the hook's own environment (/proc/self/environ)",
    source: () => 'file:///proc/self/environ',
    when: LINUX,
  },
];

const read: Row[] = [
  { name: 'a .env.example template', source: () => at('project/.env.example') },
  { name: 'a public key (.pub) outside ~/.ssh', source: () => at('keys/id_ed25519.pub') },
  { name: 'a text that quotes a key header mid-file', source: () => at('docs/report.txt') },
  { name: 'a name starting with id_ that is no key name', source: () => at('docs/id_card.txt') },
  { name: 'a file named .ssh.txt (not the folder)', source: () => at('docs/.ssh.txt') },
  { name: 'the innocent target of a linked .npmrc', source: () => at('dotfiles/npmrc') },
  { name: 'an auth.json outside ~/.codex', source: () => at('project/auth.json') },
  { name: 'a config.toml outside ~/.codex', source: () => at('project/config.toml') },
  { name: 'an mcp.json outside ~/.cursor', source: () => at('project/mcp.json') },
];

async function run(source: string, env: Record<string, string> = {}) {
  const result = await runHook(stdinFor('claude-code', { attachment: { source } }), { env });
  return { result, output: JSON.parse(result.stdout).hookSpecificOutput };
}

describe('the hook refuses well-known credential locations by default', () => {
  it.each(refused.filter((row) => row.when !== false))('refuses $name', async ({ source }) => {
    const { result, output } = await run(source());
    expect(output.permissionDecision).toBe('deny');
    expect(output.permissionDecisionReason).toContain(': HOOK_CREDENTIAL_FILE_DENIED: ');
    expect(output.permissionDecisionReason).toContain('denyCredentialFiles: false');
    expect(result.stdout).not.toContain('do-not-send-me');
    expect(result.stdout).not.toContain(Buffer.from(KEY).toString('base64').slice(0, 24));
  });

  it.each(read.filter((row) => row.when !== false))('still reads $name', async ({ source }) => {
    const { output } = await run(source());
    expect(output.updatedInput.attachment.source).toMatch(/^data:[^;]+;base64,/);
  });
});

describe('turning the credential list off', () => {
  it('reads ~/.aws/credentials with TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES=0', async () => {
    const { output } = await run(at('.aws/credentials'), {
      TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES: '0',
    });
    expect(output.updatedInput.attachment.source).toBe(
      `data:application/octet-stream;base64,${Buffer.from(SECRET).toString('base64')}`,
    );
  });

  it('reads it with denyCredentialFiles: false in the hook config', async () => {
    const config = join(home, 'hook-config.json');
    await writeFile(config, JSON.stringify({ denyCredentialFiles: false }));
    const { output } = await run(at('keys/server.pem'), { TOOLFENCE_HOOK_CONFIG: config });
    expect(output.updatedInput.attachment.source).toMatch(/^data:/);
  });

  it.each([
    ['an environment value other than 0 or 1', { TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES: 'no' }],
    ['a config value that is not a boolean', { config: '"false"' }],
  ])('fails closed on %s', async (_name, given) => {
    const env: Record<string, string> = {};
    if ('config' in given) {
      const config = join(home, 'bad-config.json');
      await writeFile(config, `{ "denyCredentialFiles": ${given.config} }`);
      env.TOOLFENCE_HOOK_CONFIG = config;
    } else Object.assign(env, given);
    const { output } = await run(at('docs/report.txt'), env);
    expect(output.permissionDecisionReason).toContain(': HOOK_CONFIG_INVALID: ');
  });
});
