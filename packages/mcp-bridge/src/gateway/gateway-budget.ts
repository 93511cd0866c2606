import { createHash } from 'node:crypto';
import {
  type BudgetLimits,
  type BudgetRequest,
  type BudgetReserver,
  type BudgetScope,
  CallBudget,
  principalOf,
} from '@toolfence/tools/core';
import { GatewayConfigError } from './errors.js';
import type { GatewayBudgetSettings } from './gateway-config.js';

/** Default Redis key prefix of the gateway's budgets: `toolfence:gateway`. */
export const DEFAULT_GATEWAY_BUDGET_KEY_PREFIX = 'toolfence:gateway';

/** A budget built from `gateway.budget`, with what the gateway must close at the end. */
export interface GatewayBudget {
  /** What the gateway's registry reserves from. */
  readonly reserver: BudgetReserver;
  /** `memory` or `redis`. */
  readonly kind: 'memory' | 'redis';
  /** Closes the Redis connection (nothing for `memory`). */
  close(): Promise<void>;
}

interface RedisLike {
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  ping(): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (error: unknown) => void): unknown;
}

function hasLimits(limits: BudgetLimits | undefined): limits is BudgetLimits {
  return (
    limits !== undefined && (limits.maxCalls !== undefined || limits.maxConcurrent !== undefined)
  );
}

/**
 * The scopes of one call: the whole gateway, its upstream server, its tool and its caller, each
 * only when it has a limit. `serverOf` maps an offered name (`namespace__tool`) to its server.
 */
function scopesOf(
  settings: GatewayBudgetSettings,
  serverOf: (toolName: string) => string | undefined,
): (request: BudgetRequest) => readonly BudgetScope[] {
  const gateway: BudgetLimits = {
    ...(settings.maxCalls === undefined ? {} : { maxCalls: settings.maxCalls }),
    ...(settings.maxConcurrent === undefined ? {} : { maxConcurrent: settings.maxConcurrent }),
  };
  return (request) => {
    const scopes: BudgetScope[] = [];
    if (hasLimits(gateway)) scopes.push({ key: 'gateway', limits: gateway });
    if (hasLimits(settings.perServer)) {
      scopes.push({
        key: `server:${serverOf(request.toolName) ?? 'unknown'}`,
        limits: settings.perServer,
      });
    }
    if (hasLimits(settings.perTool)) {
      scopes.push({ key: `tool:${request.toolName}`, limits: settings.perTool });
    }
    if (hasLimits(settings.perPrincipal)) {
      // One counter per caller; the key is a digest, so no issuer or subject text reaches Redis.
      const principal = principalOf(request.context);
      scopes.push({
        key:
          principal === undefined
            ? 'principal:anonymous'
            : `principal:${createHash('sha256').update(`${principal.issuer}\n${principal.subject}`).digest('hex')}`,
        limits: settings.perPrincipal,
      });
    }
    return scopes;
  };
}

/**
 * Builds the budget `gateway.budget` describes: `memory` (`CallBudget`, this process only) or
 * `redis://…` (`RedisCallBudget` from `@toolfence/tools/redis-budget`, shared by every replica
 * on that Redis with the same `keyPrefix`). The optional peer `ioredis` is loaded here, so a
 * missing one stops the start; an unreachable Redis does not (each call fails closed, or runs
 * unbudgeted with `onUnavailable: 'allow'`), and `warn` is told.
 * @throws {GatewayConfigError} when `ioredis` is not installed.
 */
export async function gatewayBudget(
  settings: GatewayBudgetSettings,
  serverOf: (toolName: string) => string | undefined,
  warn: (message: string) => void = () => undefined,
): Promise<GatewayBudget> {
  const scopes = scopesOf(settings, serverOf);
  const url = settings.url ?? 'memory';
  if (url === 'memory') {
    const reserver = new CallBudget({
      scopes,
      ...(settings.cancelHoldMs === undefined ? {} : { cancelHoldMs: settings.cancelHoldMs }),
    });
    return { reserver, kind: 'memory', close: async () => undefined };
  }
  const name = 'ioredis';
  let Redis: new (url: string, options: Record<string, unknown>) => RedisLike;
  try {
    const module = (await import(name)) as { Redis?: typeof Redis; default?: typeof Redis };
    Redis = (module.Redis ?? module.default) as typeof Redis;
  } catch (error) {
    throw new GatewayConfigError(
      'gateway.budget: a redis:// budget needs the optional peer ioredis@6 (npm install ioredis@6)',
      { details: { at: 'gateway.budget.url', peer: 'ioredis' }, cause: error },
    );
  }
  const { RedisCallBudget } = await import('@toolfence/tools/redis-budget');
  const timeoutMs = settings.timeoutMs ?? 2_000;
  const client = new Redis(url, {
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    lazyConnect: false,
  });
  // Connection errors surface as refused calls (fail closed); nothing is printed per retry.
  client.on('error', () => undefined);
  const reserver = new RedisCallBudget({
    client,
    keyPrefix: settings.keyPrefix ?? DEFAULT_GATEWAY_BUDGET_KEY_PREFIX,
    scopes,
    timeoutMs,
    ...(settings.ttlMs === undefined ? {} : { ttlMs: settings.ttlMs }),
    ...(settings.onUnavailable === undefined ? {} : { onUnavailable: settings.onUnavailable }),
    ...(settings.cancelHoldMs === undefined ? {} : { cancelHoldMs: settings.cancelHoldMs }),
  });
  const ping = await Promise.race([
    client.ping().then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
  ]);
  if (!ping) {
    warn(
      `gateway.budget: Redis cannot be reached yet; calls are ${
        settings.onUnavailable === 'allow' ? 'run without a budget' : 'refused (fail closed)'
      } until it can`,
    );
  }
  return {
    reserver,
    kind: 'redis',
    close: async () => {
      // Frees the slots held after cancels and sends the pending releases before quitting.
      await reserver.close();
      await Promise.race([
        client.quit().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 1_000).unref()),
      ]);
      client.disconnect();
    },
  };
}
