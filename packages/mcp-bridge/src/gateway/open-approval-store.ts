import { type ApprovalSpentStore, MemorySpentApprovals } from './approval-spent-store.js';
import { GatewayConfigError } from './errors.js';
import type { GatewaySettings } from './gateway-config.js';
import { approvalStoreUrlOf } from './gateway-config.js';

/** Milliseconds one Redis `SET` of a spent approval may take when the budget names none: 2,000. */
const DEFAULT_REDIS_TIMEOUT_MS = 2_000;

interface RedisClient {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (error: unknown) => void): unknown;
}

/**
 * Opens the store where `serve` records spent approvals (see `approvalStoreUrlOf`): memory,
 * Redis (its own `ioredis` connection, the budget's key prefix and timeout) or PostgreSQL.
 * @throws {GatewayConfigError} when the optional peer (`ioredis`, `pg`) is not installed.
 */
export async function openApprovalStore(
  settings: GatewaySettings,
  maxSpentApprovals?: number,
): Promise<ApprovalSpentStore> {
  const url = approvalStoreUrlOf(settings);
  if (url === 'memory') return new MemorySpentApprovals(maxSpentApprovals);
  // The PostgreSQL and Redis stores (and the budget's key prefix) load only when the config names
  // them: `serve` with memory approvals starts without them (issue 41).
  if (/^postgres(ql)?:/i.test(url)) {
    const { PostgresSpentApprovals } = await import('./postgres-spent-approvals.js');
    return PostgresSpentApprovals.open({ connectionString: url });
  }
  const name = 'ioredis';
  let Redis: new (url: string, options: Record<string, unknown>) => RedisClient;
  try {
    const module = (await import(name)) as { Redis?: typeof Redis; default?: typeof Redis };
    Redis = (module.Redis ?? module.default) as typeof Redis;
  } catch (error) {
    throw new GatewayConfigError(
      'gateway.approvals: a redis:// approval store needs the optional peer ioredis@6 (npm install ioredis@6)',
      { details: { at: 'gateway.approvals', peer: 'ioredis' }, cause: error },
    );
  }
  const [{ RedisSpentApprovals }, { DEFAULT_GATEWAY_BUDGET_KEY_PREFIX }] = await Promise.all([
    import('./redis-spent-approvals.js'),
    import('./gateway-budget.js'),
  ]);
  const timeoutMs = settings.budget?.timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS;
  const client = new Redis(url, {
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
  });
  // Unreachable: each approval presented is refused (fails closed); nothing printed per retry.
  client.on('error', () => undefined);
  return new RedisSpentApprovals({
    client,
    keyPrefix: settings.budget?.keyPrefix ?? DEFAULT_GATEWAY_BUDGET_KEY_PREFIX,
    timeoutMs,
    close: async () => {
      await Promise.race([
        client.quit().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 1_000).unref()),
      ]);
      client.disconnect();
    },
  });
}
