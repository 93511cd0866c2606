import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type {
  AccessTokenType,
  ConnectionRecord,
  DpopKeyRecord,
  PendingAuthorization,
  TokenAuthMethod,
} from './connection-store.js';
import { StoreDecryptionError, StoreKeyError } from './store-errors.js';

/**
 * The record layout both persistent stores keep (SQLite schema 3, PostgreSQL schema 1): plain
 * steering columns plus one AES-256-GCM blob of the secret fields, bound to every plain column.
 * One layout, so a row moves between the back ends unchanged.
 */
export interface StoredRow {
  id: string;
  url: string;
  issuer: string | null;
  resource: string | null;
  client_id: string | null;
  token_auth_method: string | null;
  redirect_uri: string | null;
  expires_at: number | null;
  scope: string | null;
  authorization_attempts: number | null;
  last_authorization_at: number | null;
  key_id: string;
  secrets: Buffer;
  updated_at: number;
}

/** The secret fields of a record, encrypted as one JSON blob. */
export interface StoredSecrets {
  clientSecret?: string;
  accessToken?: string;
  refreshToken?: string;
  pending?: PendingAuthorization;
  tokenType?: AccessTokenType;
  dpopKey?: DpopKeyRecord;
}

/** An AES-256 key with its public id (a keyed hash, so the id reveals nothing of the key). */
export interface StoreKey {
  readonly id: string;
  readonly bytes: Buffer;
}

/** Blob version byte of the current layout. */
export const RECORD_VERSION_BYTE = 3;

/** Checks a 32-byte key option and derives its id. */
export function storeKeyOf(value: unknown, name: string): StoreKey {
  if (!(value instanceof Uint8Array) || value.byteLength !== 32) {
    throw new StoreKeyError(`${name} must be 32 bytes (AES-256)`, { details: { option: name } });
  }
  const bytes = Buffer.from(value);
  const id = createHmac('sha256', bytes).update('toolfence connection-store key id').digest('hex');
  return { id: id.slice(0, 16), bytes };
}

/**
 * The associated data: every plain column, so that a changed issuer, resource, client id, auth
 * method, redirect URI, URL, scope, expiry, counter or timestamp fails decryption.
 */
export function recordAad(row: Omit<StoredRow, 'secrets'>): Buffer {
  return Buffer.from(
    JSON.stringify([
      'toolfence/connection-store/v3',
      row.id,
      row.url,
      row.issuer,
      row.resource,
      row.client_id,
      row.token_auth_method,
      row.redirect_uri,
      row.expires_at,
      row.scope,
      row.authorization_attempts,
      row.last_authorization_at,
      row.key_id,
      row.updated_at,
    ]),
    'utf8',
  );
}

/**
 * Encrypts `secrets` under `key`, bound to the row's plain columns (with `key_id` = the key's);
 * `layout` writes another blob version bound to other associated data (PostgreSQL's v4, which
 * also binds the table).
 */
export function sealSecrets(
  key: StoreKey,
  row: Omit<StoredRow, 'secrets'>,
  secrets: StoredSecrets,
  layout: {
    readonly version: number;
    readonly aadOf: (row: Omit<StoredRow, 'secrets'>) => Buffer;
  } = { version: RECORD_VERSION_BYTE, aadOf: recordAad },
): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.bytes, iv);
  cipher.setAAD(layout.aadOf({ ...row, key_id: key.id }));
  const body = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([layout.version]), iv, cipher.getAuthTag(), body]);
}

/**
 * Decrypts a row's secrets with the key its `key_id` names. `layout` reads an older blob
 * version bound to other associated data (SQLite's schema 1 and 2, read once by its migration).
 */
export function openSecrets(
  keys: ReadonlyMap<string, StoreKey>,
  row: StoredRow,
  layout: { readonly version: number; readonly aad: Buffer } = {
    version: RECORD_VERSION_BYTE,
    aad: recordAad(row),
  },
): StoredSecrets {
  const key = keys.get(row.key_id);
  if (key === undefined) {
    throw new StoreKeyError('the record is encrypted under a key that was not supplied', {
      details: { id: row.id },
    });
  }
  const blob = row.secrets;
  try {
    if (!Buffer.isBuffer(blob) || blob[0] !== layout.version || blob.byteLength < 29) {
      throw new Error('format');
    }
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, blob.subarray(1, 13));
    decipher.setAAD(layout.aad);
    decipher.setAuthTag(blob.subarray(13, 29));
    const text = Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()]);
    return JSON.parse(text.toString('utf8')) as StoredSecrets;
  } catch {
    throw new StoreDecryptionError(
      'a stored record failed authenticated decryption (its secrets or one of its columns were changed outside the store, or it is corrupted); nothing was sent',
      { details: { id: row.id } },
    );
  }
}

/** The frozen record a row and its decrypted secrets stand for (absent fields left out). */
export function recordOfRow(row: StoredRow, secrets: StoredSecrets): ConnectionRecord {
  const record: Record<string, unknown> = {
    id: row.id,
    url: row.url,
    issuer: row.issuer ?? undefined,
    resource: row.resource ?? undefined,
    clientId: row.client_id ?? undefined,
    clientSecret: secrets.clientSecret,
    tokenAuthMethod: (row.token_auth_method ?? undefined) as TokenAuthMethod | undefined,
    redirectUri: row.redirect_uri ?? undefined,
    accessToken: secrets.accessToken,
    refreshToken: secrets.refreshToken,
    tokenType: secrets.tokenType,
    dpopKey: secrets.dpopKey,
    expiresAt: row.expires_at ?? undefined,
    scope: row.scope ?? undefined,
    pending: secrets.pending,
    authorizationAttempts: row.authorization_attempts ?? undefined,
    lastAuthorizationAt: row.last_authorization_at ?? undefined,
    updatedAt: row.updated_at,
  };
  for (const name of Object.keys(record)) {
    if (record[name] === undefined) delete record[name];
  }
  return Object.freeze(record as unknown as ConnectionRecord);
}

/** Splits a (checked) record into its plain columns, stamped now under `keyId`, and secrets. */
export function rowOfRecord(
  record: ConnectionRecord,
  keyId: string,
): { readonly row: Omit<StoredRow, 'secrets'>; readonly secrets: StoredSecrets } {
  const secrets: StoredSecrets = {};
  if (record.clientSecret !== undefined) secrets.clientSecret = record.clientSecret;
  if (record.accessToken !== undefined) secrets.accessToken = record.accessToken;
  if (record.refreshToken !== undefined) secrets.refreshToken = record.refreshToken;
  if (record.pending !== undefined) secrets.pending = record.pending;
  if (record.tokenType !== undefined) secrets.tokenType = record.tokenType;
  if (record.dpopKey !== undefined) secrets.dpopKey = record.dpopKey;
  const row: Omit<StoredRow, 'secrets'> = {
    id: record.id,
    url: record.url,
    issuer: record.issuer ?? null,
    resource: record.resource ?? null,
    client_id: record.clientId ?? null,
    token_auth_method: record.tokenAuthMethod ?? null,
    redirect_uri: record.redirectUri ?? null,
    expires_at: record.expiresAt ?? null,
    scope: record.scope ?? null,
    authorization_attempts: record.authorizationAttempts ?? null,
    last_authorization_at: record.lastAuthorizationAt ?? null,
    key_id: keyId,
    updated_at: Date.now(),
  };
  return { row, secrets };
}
