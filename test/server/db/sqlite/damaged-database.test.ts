/**
 * A damaged database file (garbage written over a b-tree page of the idempotency table, found
 * through `dbstat`) is found before it is used: the service refuses to start, naming the damage
 * and the way back (a backup); a page damaged while the service runs turns `/healthz` to 503
 * `damaged` at the first request that meets it, and the periodic check (run off the event loop on a
 * connection of its own) finds it with no request at all.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer, type RunningServer } from '../../../helpers/server';
import { openSqliteDatabase } from '../../../../server/src/db/sqlite/database';
import { SqliteCondition } from '../../../../server/src/db/sqlite/condition';
import { call, postJson } from '../../support/http';

jest.setTimeout(60_000);

let dataDir = '';
const servers: RunningServer[] = [];
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-damaged-'));
});
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
	rmSync(dataDir, { recursive: true, force: true });
});

const file = () => join(dataDir, 'imagegen.db');

/** Fills the idempotency table over several pages, folds the log into the file, closes. */
function seedIdempotencyRows(database: Database.Database): void {
	const insert = database.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, lease_until, expires_at) VALUES (?, ?, ?, ?, ?)');
	database.transaction(() => {
		for (let row = 0; row < 2_000; row++) insert.run('seeded', `key-${row}`, 'f'.repeat(64), 0, Date.now() + 86_400_000);
	})();
	database.pragma('wal_checkpoint(TRUNCATE)');
}

/** Garbage over the leaf pages of the table's b-tree (where rows and new rows go), in the file itself. */
function damageIdempotencyPages(): void {
	const database = new Database(file(), { readonly: true });
	const pageSize = database.pragma('page_size', { simple: true }) as number;
	const leaves = database.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 'idempotency_keys' AND pagetype = 'leaf'").all();
	database.close();
	expect(leaves.length).toBeGreaterThan(3);
	const descriptor = openSync(file(), 'r+');
	try {
		for (const { pageno } of leaves) writeSync(descriptor, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (pageno - 1) * pageSize);
	} finally {
		closeSync(descriptor);
	}
}

it('at start: the service refuses with exit code 1, naming the damage and the backup', async () => {
	const database = openSqliteDatabase(dataDir);
	seedIdempotencyRows(database);
	database.close();
	damageIdempotencyPages();

	const error = await startServer({ dataDir }).then(
		(server) => {
			servers.push(server);
			return new Error('started');
		},
		(caught: Error) => caught,
	);
	expect(error.message).toMatch(/exited with 1 before it was ready/);
	expect(error.message).toMatch(/the database .*imagegen\.db is damaged/);
	expect(error.message).toMatch(/quick_check/);
	expect(error.message).toMatch(/backup/);
});

it('while running: the first request that meets the damaged page turns /healthz to 503 damaged', async () => {
	const server = await startServer({ dataDir });
	servers.push(server);
	const database = new Database(file());
	seedIdempotencyRows(database);
	database.close();
	damageIdempotencyPages();

	const generation = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'meets the damage' }, { headers: { 'idempotency-key': 'key-1500' } });
	expect(generation.status).toBe(500);
	const health = await call(server, '/healthz', { auth: null });
	expect(health.status).toBe(503);
	expect(health.body).toMatchObject({ status: 'degraded', engines: { database: 'damaged' } });
});

it('the periodic check finds damage no request has met, on a connection of its own', async () => {
	const database = openSqliteDatabase(dataDir);
	seedIdempotencyRows(database);
	const condition = new SqliteCondition(database);
	expect(await condition.check()).toBe('ok');
	damageIdempotencyPages();
	expect(await condition.check()).toBe('damaged');
	expect(condition.current()).toMatchObject({ state: 'damaged', checkedAt: expect.any(Date) });
	database.close();
});
