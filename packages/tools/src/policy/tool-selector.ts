// Which tools a rule names. One reading for every caller (the registry's RuleBasedPolicy, the
// gateway's `serve` and `inspect`): a name with `__` is the offered name (`server__tool`), a name
// without it is the server's own tool name (in any server), and a `server` narrows to one server.
import { wildcardMatcher } from '../internal/wildcard.js';
import type { ToolOrigin } from '../registry/tool.js';

/**
 * `*` → any; no wildcard → exact; else a glob of the whole text (`*` any run, `?` one character),
 * matched without backtracking (`wildcardMatcher`): a `matches` condition reads arguments a
 * model wrote, which must not be able to stall the process with a long text that does not match.
 */
export function globMatcher(pattern: string): (name: string) => boolean {
  if (pattern === '*') return () => true;
  if (!/[*?]/.test(pattern)) return (name) => name === pattern;
  return wildcardMatcher(pattern);
}

/** `*` → any; no wildcard → exact; else a glob anchored at both ends. */
export const toolMatcher: (pattern: string) => (name: string) => boolean = globMatcher;

/** What a rule's tool selector is matched against: the registry name and the tool's origin. */
export interface ToolIdentity {
  /** The registry name (for a gateway: the offered name `server__tool`). */
  readonly name: string;
  /** The server and the server's own tool name, for a bridged tool (`ToolSpec.origin`). */
  readonly origin?: ToolOrigin | undefined;
}

/** How a rule names tools. */
export interface ToolSelector {
  /**
   * A name or glob. With `__`: the registry (offered) name, `fs__read_*`. Without: the server's own
   * tool name in any server, `read_*` (a local tool, which has no origin: its registry name).
   */
  readonly tool?: string | undefined;
  /** A server name or glob; the rule then matches only that server's tools (by their own name). */
  readonly server?: string | undefined;
}

/** Reads `spec.origin` defensively (an authorizer may be called with any spec). */
export function originOf(value: unknown): ToolOrigin | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { server, tool } = value as { server?: unknown; tool?: unknown };
  if (typeof tool !== 'string') return undefined;
  // The registry checked it (no copy per call); a server of another type is left out.
  if (server === undefined || typeof server === 'string') return value as ToolOrigin;
  return { tool };
}

/** Compiles a selector (already checked: `tool` or `server` is a non-empty string). */
export function compileToolSelector(selector: ToolSelector): (identity: ToolIdentity) => boolean {
  const tool = selector.tool ?? '*';
  const matchTool = globMatcher(tool);
  if (selector.server !== undefined) {
    const matchServer = globMatcher(selector.server);
    return ({ origin }) =>
      origin?.server !== undefined && matchServer(origin.server) && matchTool(origin.tool);
  }
  if (tool.includes('__')) return ({ name }) => matchTool(name);
  return ({ name, origin }) => matchTool(origin === undefined ? name : origin.tool);
}
