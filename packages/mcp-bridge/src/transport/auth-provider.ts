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
  /**
   * The `Authorization` header the refused request carried (`undefined` if it carried none).
   * A provider refreshes only when this is still its current credential: when several requests
   * were refused with the same stale token, the first challenge refreshes and the others just
   * retry with the fresh token (secret: never log it).
   */
  readonly authorization?: string | undefined;
  /** The `DPoP-Nonce` header of the answer (RFC 9449 §9), if any. */
  readonly dpopNonce?: string | undefined;
  /** The challenge before this one for the same request, if any. */
  readonly previous?: McpPreviousChallenge | undefined;
}

/** The earlier challenge of the same request (a DPoP provider tells a nonce loop from a refresh). */
export interface McpPreviousChallenge {
  /** Its HTTP status. */
  readonly status: 401 | 403;
  /** Its raw `WWW-Authenticate` header. */
  readonly wwwAuthenticate: string | undefined;
}

/** One outgoing HTTP request, for {@link McpAuthProvider.headers}. */
export interface McpAuthRequest {
  /** `POST`, `GET` or `DELETE`. */
  readonly method: string;
  /** The full request URL. */
  readonly url: string;
}

/** The auth headers of one request: `Authorization`, and a DPoP proof (RFC 9449) with it. */
export interface McpAuthHeaders {
  /** The whole `Authorization` value, for example `Bearer <token>` or `DPoP <token>`. */
  readonly authorization: string;
  /** The `DPoP` proof JWT for exactly this request, when the token is DPoP-bound. */
  readonly dpop?: string | undefined;
}

/** A response the provider may learn from (RFC 9449 §9: a fresh `DPoP-Nonce`). */
export interface McpAuthResponse {
  /** The request URL. */
  readonly url: string;
  /** The HTTP status. */
  readonly status: number;
  /** The `DPoP-Nonce` header, if any. */
  readonly dpopNonce: string | undefined;
}

/**
 * The seam an OAuth implementation plugs into: it owns the `Authorization` header and reacts to
 * 401/403 challenges. `McpClient` accepts either `token` or `authProvider`, not both.
 */
export interface McpAuthProvider {
  /** The bearer token for the next request, or `undefined` to send none. Called for every request. */
  token(): string | undefined | Promise<string | undefined>;
  /**
   * The auth headers for one request (its method and URL), or `undefined` to send none. When
   * present it is used instead of `token()`: a DPoP provider signs a proof for each request here.
   */
  headers?(
    request: McpAuthRequest,
  ): McpAuthHeaders | undefined | Promise<McpAuthHeaders | undefined>;
  /** Called with every answered request, so a DPoP provider keeps the latest server nonce. */
  onResponse?(response: McpAuthResponse): void;
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
