/** Where the bridge sends diagnostics. Every method is optional; nothing goes to the console. */
export interface McpBridgeLogger {
  /** Receives low-level events: server stderr lines (raw server text), ignored bodies, failed session deletes. */
  debug?(message: string, details?: Readonly<Record<string, unknown>>): void;
  /** Receives informational events; reserved, the bridge sends none at this level today. */
  info?(message: string, details?: Readonly<Record<string, unknown>>): void;
  /** Receives problems the bridge reports and survives: a failed transport, a skipped malformed tool. */
  warn?(message: string, details?: Readonly<Record<string, unknown>>): void;
  /** Receives errors; reserved, the bridge sends none at this level today (failures are thrown). */
  error?(message: string, details?: Readonly<Record<string, unknown>>): void;
}
