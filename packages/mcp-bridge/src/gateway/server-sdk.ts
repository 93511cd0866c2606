import type {
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  UriTemplate,
} from '@modelcontextprotocol/server';
import type { serveStdio } from '@modelcontextprotocol/server/stdio';

/** What the gateway uses of the SDK v2 server at run time. */
export interface ServerSdk {
  readonly Server: typeof Server;
  readonly ProtocolError: typeof ProtocolError;
  readonly ProtocolErrorCode: typeof ProtocolErrorCode;
  readonly UriTemplate: typeof UriTemplate;
  readonly inputRequired: typeof inputRequired;
  readonly serveStdio: typeof serveStdio;
}

let loading: Promise<ServerSdk> | undefined;
let loaded: ServerSdk | undefined;

/**
 * Loads the SDK v2 server (its protocol types built on zod, about 60 ms) on first use, once:
 * `McpGateway.start()`, `connect()` and `reload()` wait for it, so importing the package (an
 * `McpClient` and `bridgeTools` program) never loads it.
 */
export function loadServerSdk(): Promise<ServerSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/server'),
    import('@modelcontextprotocol/server/stdio'),
  ]).then(([server, stdio]) => {
    loaded = {
      Server: server.Server,
      ProtocolError: server.ProtocolError,
      ProtocolErrorCode: server.ProtocolErrorCode,
      UriTemplate: server.UriTemplate,
      inputRequired: server.inputRequired,
      serveStdio: stdio.serveStdio,
    };
    return loaded;
  });
  return loading;
}

/** The SDK once {@link loadServerSdk} has loaded it, else undefined. */
export function loadedServerSdk(): ServerSdk | undefined {
  return loaded;
}

/**
 * The loaded SDK, for code that runs only after the gateway's start, connect or reload waited for
 * it (a downstream server's handlers, an upstream's listing being passed through).
 */
export function serverSdk(): ServerSdk {
  if (loaded === undefined) {
    throw new Error('internal: the SDK v2 server is used before McpGateway loaded it');
  }
  return loaded;
}
