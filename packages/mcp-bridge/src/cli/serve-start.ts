// The first step of `toolfence-mcp serve`, before the gateway's modules load: read and check the
// options and the config, and spawn the stdio upstreams, so their start-up overlaps the loading of the gateway,
// the SDK server and the upstream client (run-gateway.ts, loaded next). Loads only the config
// reader and `node:child_process`.
import { defaultEarlyUpstreams, EarlyUpstreams } from '../gateway/early-upstreams.js';
import { auditKeyOf, sealKeysOf } from '../gateway/gateway-config.js';
import type { CliIo } from './cli-io.js';
import {
  checkHttpAddress,
  type GatewayArguments,
  type LoadedConfig,
  loadConfig,
  parseArguments,
  usage,
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
    return { parsed, loaded, upstreams: EarlyUpstreams.start(loaded.config, earlyCount(io)) };
  } catch (error) {
    return { error };
  }
}

/** Most stdio upstreams `TOOLFENCE_EARLY_UPSTREAMS` may ask to spawn before loading. */
const MAX_EARLY_UPSTREAMS = 1000;

/**
 * How many stdio upstreams spawn before `serve` loads the gateway: `TOOLFENCE_EARLY_UPSTREAMS`
 * (0 to 1000), else the cores less one ({@link defaultEarlyUpstreams}); each other one
 * is spawned by its client.
 */
function earlyCount(io: CliIo): number {
  const text = io.env?.TOOLFENCE_EARLY_UPSTREAMS;
  if (text === undefined || text === '') return defaultEarlyUpstreams();
  const count = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!(count <= MAX_EARLY_UPSTREAMS)) {
    throw usage(
      `TOOLFENCE_EARLY_UPSTREAMS takes a whole number from 0 to ${MAX_EARLY_UPSTREAMS} (the stdio upstreams spawned before serve loads the gateway; default: the cores less one)`,
    );
  }
  return count;
}
