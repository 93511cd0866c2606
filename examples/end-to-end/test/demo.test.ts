import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const tsx = import.meta.resolve('tsx');

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', tsx, main], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('pnpm demo', () => {
  it('runs the whole story and prints a plain transcript that proves each step', async () => {
    const { code, stdout } = await runDemo();
    expect(code).toBe(0);
    // Plain output when stdout is not a TTY.
    expect(stdout).not.toContain('\u001b[');
    // Both real servers bridged, with declared contracts and the heuristic for undeclared tools.
    expect(stdout).toMatch(/listening at http:\/\/127\.0\.0\.1:\d+\/mcp/);
    expect(stdout).toMatch(/toolkit__search_notes\s+read-only\s+declared\s+allow/);
    expect(stdout).toMatch(/toolkit__save_note\s+low-risk-write\s+declared\s+ask/);
    expect(stdout).toMatch(/toolkit__delete_note\s+destructive\s+declared\s+deny/);
    expect(stdout).toMatch(/toolkit__send_message\s+external-publication\s+declared\s+ask/);
    expect(stdout).toMatch(/everything__echo\s+\S+\s+heuristic\s+/);
    // The hook substituted the file and the server received exactly its bytes.
    expect(stdout).toMatch(/hook rewrote it to data:application\/pdf;base64,/);
    expect(stdout).toContain('matches the file on disk');
    // Denied destructive call, approved write (the callback printed what it was asked).
    expect(stdout).toMatch(/toolkit__delete_note → denied \(POLICY_PERMISSION_DENIED\)/);
    expect(stdout).toContain(
      'approval asked: approve toolkit__save_note (declared risk low-risk-write)? yes',
    );
    expect(stdout).toMatch(/toolkit__save_note → approved and ran: \{"saved":"demo"/);
    expect(stdout).toContain('everything__echo → "Echo: hello from toolfence"');
    // Without the hook: the install-or-upgrade payload.
    expect(stdout).toContain(
      'gets the install-or-upgrade payload: isError=true, hook toolfence_attachment_substitution.cjs',
    );
    // The oversized reply was stopped by the record limit, and the client recovered.
    expect(stdout).toMatch(
      /export_report \(2 MiB reply\) → stopped at the 1 MiB record limit .*response-too-large/,
    );
    expect(stdout).toContain(
      "the model is told: The call may have completed, but its outcome is unknown (the server's reply was over the size limit and was refused).",
    );
    expect(stdout).toContain('the next call handshakes again and works: {"ids":["roadmap"]}');
    // The gateway: allowed, denied, asked through elicitation, and a rug pull hidden after reload.
    expect(stdout).toContain('toolkit__search_notes → allowed: {"ids":["roadmap"]}');
    expect(stdout).toMatch(/toolkit__delete_note → denied: .*denied by the gateway's policy/);
    expect(stdout).toContain('your client asks you: Allow this call to toolkit__save_note');
    expect(stdout).toContain('toolkit__save_note → approved and ran: {"saved":"gateway"');
    expect(stdout).toMatch(
      /list_changed → offered: (?!.*toolkit__search_notes).*toolkit__save_note/,
    );
    // pin --show prints the token --accept takes: the name and the digest of what was shown.
    expect(stdout).toMatch(
      /toolkit__search_notes@sha256:[0-9a-f]{64} \(server toolkit\): definition-changed/,
    );
    expect(stdout).toMatch(/toolfence-mcp pin --accept toolkit__search_notes@sha256:[0-9a-f]{64}/);
    expect(stdout).toContain('read ~/.ssh/id_rsa');
    expect(stdout).toMatch(/audit verify → audit: \d+ line\(s\), chain intact/);
    expect(stdout.trimEnd().endsWith('done')).toBe(true);
  });
});
