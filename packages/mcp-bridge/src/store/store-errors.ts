import { McpBridgeError } from '../mcp-bridge-error.js';

/** The store's encryption key is malformed, or does not match the data (wrong key). */
export class StoreKeyError extends McpBridgeError {
  static override readonly code: string = 'STORE_KEY_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/StoreKeyError');
}

/** A stored secret failed authenticated decryption (tampered or corrupted record). */
export class StoreDecryptionError extends McpBridgeError {
  static override readonly code: string = 'STORE_DECRYPTION_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/StoreDecryptionError');
}

/** The database was written by a newer schema version than this package knows. */
export class StoreSchemaError extends McpBridgeError {
  static override readonly code: string = 'STORE_SCHEMA_UNSUPPORTED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/StoreSchemaError');
}

/** No connection record exists for the given id. */
export class ConnectionNotFoundError extends McpBridgeError {
  static override readonly code: string = 'STORE_CONNECTION_NOT_FOUND';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ConnectionNotFoundError',
  );
}

/** A record given to a store is malformed (missing id or url, id changed by an update). */
export class StoreRecordError extends McpBridgeError {
  static override readonly code: string = 'STORE_RECORD_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/StoreRecordError');
}

/** The optional peer a store needs is not installed: `better-sqlite3` (SQLite) or `pg` (PostgreSQL). */
export class StoreDriverError extends McpBridgeError {
  static override readonly code: string = 'STORE_DRIVER_MISSING';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/StoreDriverError');
}

/** Another process or replica held the refresh lease or lock longer than `leaseWaitMs`. */
export class StoreLeaseTimeoutError extends McpBridgeError {
  static override readonly code: string = 'STORE_LEASE_TIMEOUT';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/StoreLeaseTimeoutError',
  );
}

/**
 * The PostgreSQL store could not reach its server, was refused, or a statement failed or ran
 * past `statementTimeoutMs` (`details.action` says what, `details.sqlState` the server's code).
 */
export class StoreUnavailableError extends McpBridgeError {
  static override readonly code: string = 'STORE_UNAVAILABLE';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/StoreUnavailableError',
  );
}
