import type { InspectPolicySummary } from '../gateway/policy-file.js';
import type { InspectReport } from './inspect-report.js';

// C0 and C1 controls (escape sequences start here), DEL, and bidirectional overrides.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Server text made safe for a terminal: no control or bidi characters, at most `max` characters. */
export function terminalText(value: string, max = 80): string {
  const clean = value.replace(UNSAFE, '?');
  const characters = [...clean];
  return characters.length <= max ? clean : `${characters.slice(0, max - 3).join('')}...`;
}

function capabilityList(capabilities: Readonly<Record<string, unknown>>): string {
  const names = Object.keys(capabilities)
    .sort()
    .map((name) => {
      const value = capabilities[name];
      const flags =
        typeof value === 'object' && value !== null && !Array.isArray(value)
          ? Object.entries(value)
              .filter(([, flag]) => flag === true)
              .map(([flag]) => terminalText(flag, 40))
          : [];
      const shown = terminalText(name, 40);
      return flags.length === 0 ? shown : `${shown} (${flags.join(', ')})`;
    });
  return names.length === 0 ? 'none' : names.join(', ');
}

function policyLine(policy: InspectPolicySummary): string {
  if (policy.kind === 'risk') {
    return (
      `risk policy${policy.source === 'default' ? ' (default)' : ''}: ` +
      `allow risk up to ${policy.risk.allowUpTo}, ask up to ${policy.risk.askUpTo}; ` +
      `allow content trust up to ${policy.contentTrust.allowUpTo}, ask up to ${policy.contentTrust.askUpTo}; ` +
      `undeclared tools: ${policy.undeclared}`
    );
  }
  return `rule policy: ${policy.rules.length} rule(s), default ${policy.default}`;
}

function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, [...cell].length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, index) =>
        index === row.length - 1
          ? cell
          : cell + ' '.repeat((widths[index] ?? 0) - [...cell].length),
      )
      .join('  ')
      .trimEnd(),
  );
}

/** The human-readable report (plain text; every server string is made terminal-safe). */
export function formatInspectReport(report: InspectReport): string {
  const lines: string[] = [];
  const server = report.server;
  lines.push(
    `Server:       ${server === null ? 'unknown' : `${terminalText(server.name)} ${terminalText(server.version, 40)}`}`,
  );
  lines.push(`Transport:    ${report.transport}`);
  lines.push(`Capabilities: ${capabilityList(report.capabilities)}`);
  lines.push(`Policy:       ${policyLine(report.policy)}`);
  lines.push(
    `Tools:        ${report.tools.length}${report.capabilities.tools === undefined ? ' (the server does not declare the tools capability)' : ''}`,
  );
  if (report.tools.length > 0) {
    lines.push('');
    const rows: string[][] = [['TOOL', 'RISK', 'CONTENT TRUST', 'SOURCE', 'POLICY', 'SCHEMA']];
    for (const tool of report.tools) {
      rows.push([
        terminalText(tool.name, 48),
        tool.risk,
        tool.contentTrust,
        tool.source,
        tool.policy.verdict,
        tool.schemaProblems.length === 0 ? 'ok' : `${tool.schemaProblems.length} problem(s)`,
      ]);
    }
    lines.push(...table(rows));
  }
  const schema = report.tools.filter((tool) => tool.schemaProblems.length > 0);
  if (schema.length > 0) {
    lines.push('', 'Schema problems (the bridge would refuse these tools):');
    for (const tool of schema) {
      for (const problem of tool.schemaProblems) {
        lines.push(
          `  ${terminalText(tool.name, 48)}: ${problem.message}${problem.reason === undefined ? '' : ` [${problem.reason}]`}`,
        );
      }
    }
  }
  const contract = report.tools.filter((tool) => tool.contractProblems.length > 0);
  if (contract.length > 0) {
    lines.push('', 'Contract problems (the cautious value is shown above):');
    for (const tool of contract) {
      for (const problem of tool.contractProblems) {
        lines.push(
          `  ${terminalText(tool.name, 48)}: ${problem.code} at ${terminalText(problem.field, 60)}`,
        );
      }
    }
  }
  if (report.skippedTools.length > 0) {
    lines.push('', 'Skipped tools (malformed in tools/list):');
    for (const problem of report.skippedTools) {
      const name = problem.name === undefined ? '' : ` ${terminalText(problem.name, 48)}`;
      lines.push(`  page ${problem.page} item ${problem.index}${name}: ${problem.reason}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
