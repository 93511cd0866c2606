// The shared connection-store suite on SqliteConnectionStore (a temp database file per test).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import { describeConnectionStore } from './connection-store-suite.js';

let folder = '';
const path = (): string => join(folder, 'store.db');

function raw<T>(use: (database: Database.Database) => T): T {
  const database = new Database(path());
  try {
    return use(database);
  } finally {
    database.close();
  }
}

describeConnectionStore({
  name: 'SqliteConnectionStore',
  async fresh() {
    folder = await mkdtemp(join(tmpdir(), 'sqlite-store-suite-'));
  },
  async open({ key, previousKeys, leaseWaitMs, extra }) {
    return new SqliteConnectionStore({
      path: path(),
      key,
      ...(previousKeys === undefined ? {} : { previousKeys }),
      ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
      ...extra,
    });
  },
  async setColumn(id, column, value) {
    raw((database) =>
      database.prepare(`UPDATE connections SET ${column} = ? WHERE id = ?`).run(value, id),
    );
  },
  async readSecrets(id) {
    return raw(
      (database) =>
        (
          database.prepare('SELECT secrets FROM connections WHERE id = ?').get(id) as {
            secrets: Buffer;
          }
        ).secrets,
    );
  },
  async writeSecrets(id, blob) {
    raw((database) =>
      database.prepare('UPDATE connections SET secrets = ? WHERE id = ?').run(blob, id),
    );
  },
  async dump() {
    const file = await readFile(path());
    const wal = await readFile(`${path()}-wal`).catch(() => Buffer.alloc(0));
    return file.toString('latin1') + wal.toString('latin1');
  },
  async setSchemaVersion(version) {
    raw((database) => database.pragma(`user_version = ${version}`));
  },
  async dispose() {
    await rm(folder, { recursive: true, force: true });
  },
});
