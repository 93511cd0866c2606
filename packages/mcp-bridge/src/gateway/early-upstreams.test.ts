// The stdio upstreams kept back from the early spawn (`startRest`): spawned once `serve` answered
// its client's `initialize`, except those whose client already asked for its process (that
// client spawns its own), and none when early spawning is off or after dispose. Real processes.
import { afterEach, describe, expect, it } from 'vitest';
import { EarlyUpstreams } from './early-upstreams.js';
import type { GatewayConfig, GatewayServerConfig } from './gateway-config.js';

const idle = (): GatewayServerConfig =>
  ({
    command: process.execPath,
    args: ['-e', 'setInterval(() => {}, 60_000)'],
  }) as unknown as GatewayServerConfig;

const configOf = (names: readonly string[]): GatewayConfig =>
  ({
    mcpServers: Object.fromEntries(names.map((name) => [name, idle()])),
  }) as unknown as GatewayConfig;

describe('EarlyUpstreams.startRest', { timeout: 30_000 }, () => {
  const started: EarlyUpstreams[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((early) => early.dispose(500)));
  });

  it('spawns the upstreams kept back, except one whose client already asked for its process', () => {
    const config = configOf(['a', 'b', 'c']);
    const early = EarlyUpstreams.start(config, 1);
    started.push(early);
    expect(early.pids).toHaveLength(1);
    const servers = config.mcpServers;
    // b's client asked before startRest: it was not spawned early, so it spawns its own.
    expect(EarlyUpstreams.processFor(config, 'b', servers.b as GatewayServerConfig)).toBe(
      undefined,
    );
    early.startRest();
    expect(early.pids).toHaveLength(2);
    expect(EarlyUpstreams.processFor(config, 'c', servers.c as GatewayServerConfig)).toBeDefined();
    expect(EarlyUpstreams.processFor(config, 'b', servers.b as GatewayServerConfig)).toBe(
      undefined,
    );
    // A second call spawns nothing more.
    early.startRest();
    expect(early.pids).toHaveLength(2);
  });

  it('spawns nothing when early spawning is off (0)', () => {
    const early = EarlyUpstreams.start(configOf(['a', 'b']), 0);
    started.push(early);
    early.startRest();
    expect(early.pids).toHaveLength(0);
  });

  it('spawns nothing after dispose', async () => {
    const early = EarlyUpstreams.start(configOf(['a', 'b', 'c']), 1);
    started.push(early);
    await early.dispose(500);
    early.startRest();
    expect(early.pids).toHaveLength(1);
  });
});
