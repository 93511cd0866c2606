/** An HTTP authorization challenge: the server answered 401 or 403. */
export interface McpAuthChallenge {
  /** 401 (no or stale credential) or 403 (for example `insufficient_scope`). */
  readonly status: 401 | 403;
  /** The raw `WWW-Authenticate` header, if the server sent one (parse it; never log it whole). */
  readonly wwwAuthenticate: string | undefined;
  /** The MCP server URL the request went to. */
  readonly url: string;
  /** 1 for the first challenge of this request, 2 for the next. */
  readonly attempt: number;
}

/**
 * The seam an OAuth implementation plugs into: it owns the `Authorization` header and reacts to
 * 401/403 challenges. `McpClient` accepts either `token` or `authProvider`, not both.
 */
export interface McpAuthProvider {
  /** The bearer token for the next request, or `undefined` to send none. Called for every request. */
  token(): string | undefined | Promise<string | undefined>;
  /**
   * Called when the server answers 401/403. Resolve `true` after making a fresh credential
   * available through `token()`: the same request is sent once more (the server refused it, so
   * it did not run). Resolve `false` (or throw) to fail the request.
   */
  onChallenge?(challenge: McpAuthChallenge): boolean | Promise<boolean>;
  /** How many challenges one request may answer with a retry. Default 2 (a refresh, then a step-up). */
  readonly maxChallengesPerRequest?: number;
}

/** What `token` accepts: a fixed string or a (possibly async) function resolved for every request. */
export type McpTokenSource = string | (() => string | Promise<string>);
