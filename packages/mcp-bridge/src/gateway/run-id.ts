import { randomUUID } from 'node:crypto';

/** This process's part of every run id: random, so ids of replicas sharing a budget never meet. */
const RUN_ID_PREFIX = `gateway-${randomUUID()}-`;
let runs = 0;

/**
 * A fresh `runId` for one call's tool context: `gateway-<uuid of this process>-<n>`, unique in this
 * process (a counter) and across processes (the prefix), without a random UUID per call. A run
 * id names a run for the budget's per-run limits and an approval's binding; it is not a secret.
 */
export function nextRunId(): string {
  runs += 1;
  return RUN_ID_PREFIX + runs;
}
