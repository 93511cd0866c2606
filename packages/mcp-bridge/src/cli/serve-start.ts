// The first step of `toolfence-mcp serve`, before the gateway's modules load: read and check the
// options and the config, and spawn the stdio upstreams, so their start-up overlaps the loading of the gateway,
// the SDK server and the upstream client (run-gateway.ts, loaded next). Loads only the config
// reader and `node:child_process`.
import { EarlyUpstreams } from '../gateway/early-upstreams.js';
import { auditKeyOf, sealKeysOf } from '../gateway/gateway-config.js';
import type { CliIo } from './cli-io.js';
import {
  checkHttpAddress,
  type GatewayArguments,
  type LoadedConfig,
  loadConfig,
  parseArguments,
} from './serve-arguments.js';

/** What `serve` read and started before loading the gateway, or why it could not. */
export type PreparedServe =
  | {
      readonly parsed: GatewayArguments;
      readonly loaded: LoadedConfig;
      /** The stdio upstreams spawned early; `serve` owns them (adopted, or disposed). */
      readonly upstreams: EarlyUpstreams;
    }
  | { readonly error: unknown };

/**
 * Reads `serve`'s options and config and spawns its stdio upstreams. Never throws: a refused
 * option or config comes back as `error` (nothing was spawned), for `runServe` to report.
 */
export async function prepareServe(argv: readonly string[], io: CliIo): Promise<PreparedServe> {
  try {
    const parsed = parseArguments(argv);
    const loaded = await loadConfig(parsed, io);
    // What can refuse the options and the config cheaply is checked before anything starts: a
    // bad --http value, an audit or sealing key that cannot be decoded. (The policy file, the
    // console and the stores are checked after; a refusal there ends these processes.)
    if (parsed.http !== undefined) checkHttpAddress(parsed.http, loaded.config, io);
    auditKeyOf(loaded.config.gateway, io.env ?? {});
    sealKeysOf(loaded.config.gateway, io.env ?? {});
    return { parsed, loaded, upstreams: EarlyUpstreams.start(loaded.config) };
  } catch (error) {
    return { error };
  }
}
