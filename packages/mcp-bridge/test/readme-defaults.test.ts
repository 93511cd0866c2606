import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_CONCURRENT_REQUESTS } from '../src/client/mcp-client.js';
import { DEFAULT_AUDIT_MAX_BATCH_LINES } from '../src/gateway/audit-log.js';
import { GATEWAY_LIMIT_DEFAULTS } from '../src/gateway/gateway-config.js';

// The README states defaults that live in the code; these rows must say what the code does.
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function section(heading: string): string {
  const start = readme.indexOf(`\n## ${heading}`);
  expect(start).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The default cell of an options-table row `| \`name\` | default | meaning |` in `text`. */
function defaultOf(text: string, option: string): string | undefined {
  const row = text.split('\n').find((line) => line.startsWith(`| \`${option}\` |`));
  return row?.split(' | ')[1];
}

describe('README defaults agree with the code', () => {
  it("says in 'Coming from mistri' how many requests one client has in flight", () => {
    const mistri = section('Coming from mistri');
    expect(mistri).not.toMatch(/one client serializes its requests,/);
    expect(mistri).toContain(
      `default ${DEFAULT_MAX_CONCURRENT_REQUESTS} (\`DEFAULT_MAX_CONCURRENT_REQUESTS\`)`,
    );
    expect(mistri).toContain('`maxConcurrentRequests: 1` serializes');
    expect(defaultOf(section('`new McpClient(options)`'), 'maxConcurrentRequests')).toBe(
      `\`${DEFAULT_MAX_CONCURRENT_REQUESTS}\``,
    );
  });

  it('gives needsApproval its real default (off), not a risk rule', () => {
    const bridging = section('Bridging: `bridgeTools(client, options?)`');
    expect(defaultOf(bridging, 'needsApproval')).toMatch(/^unset: off/);
    expect(defaultOf(bridging, 'approvalRisk')).toBe("`'none'`");
  });

  it('states the audit group commit bound the code uses (gateway.auditMaxBatchLines)', () => {
    const serve = section('`toolfence-mcp serve`: a policy-enforcing gateway');
    expect(defaultOf(serve, 'gateway.auditMaxBatchLines')).toBe(
      String(DEFAULT_AUDIT_MAX_BATCH_LINES),
    );
    expect(readme).toMatch(
      new RegExp(
        `default\\s+${DEFAULT_AUDIT_MAX_BATCH_LINES} \\(\`DEFAULT_AUDIT_MAX_BATCH_LINES\`\\)`,
      ),
    );
  });

  it("states the defaults of the config keys for the library's limits (pins, tool names, passthrough)", () => {
    const serve = section('`toolfence-mcp serve`: a policy-enforcing gateway');
    for (const [key, value] of Object.entries(GATEWAY_LIMIT_DEFAULTS)) {
      expect({ key, row: defaultOf(serve, `gateway.${key}`)?.split(' ')[0] }).toEqual({
        key,
        row: String(value),
      });
    }
  });
});
