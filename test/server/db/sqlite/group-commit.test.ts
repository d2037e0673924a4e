/**
 * Group commit on the data dir's database: the hot path's writes (file reservations, publishes,
 * usage lines) that arrive together share one transaction, so one commit and one sync of the
 * write-ahead log serve them; a group with a write that must be on the disk commits with
 * `synchronous = FULL`. (test/server/sqlite/crash-safety.test.ts checks what a kill keeps.)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, type SqliteDatabase } from '../../../../server/src/db/sqlite/database';
import { commitThread } from '../../../../server/src/db/sqlite/commit-thread';
import { groupCommitOf } from '../../../../server/src/db/sqlite/group-commit';
import { SqlFileMetadata } from '../../../../server/src/storage/sql-file-metadata';
import { SqliteAdapter } from '../../../../server/src/db/sqlite/sqlite-adapter';
import { SqlUsageLedger } from '../../../../server/src/usage/sql-usage-ledger';
import { pngFileRecord } from '../../support/file-records';
import { useSqliteDataDir } from '../../support/sqlite-data-dir';

const dataDir = useSqliteDataDir('imagegen-sqlite-group-');
const log = { error: () => undefined, info: () => undefined };
const EXPIRES = new Date('2099-01-01T00:00:00Z');

const record = (id: string) => pngFileRecord(id, { expiresAt: EXPIRES });

/** Commits in the write-ahead log since its last reset: each transaction ends in one commit frame. */
function walFrames(database: SqliteDatabase): number {
	const [row] = database.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
	return row!.log;
}

async function storeConcurrently(store: SqlFileMetadata, ledger: SqlUsageLedger, count: number): Promise<void> {
	const ids = Array.from({ length: count }, (_, index) => `file-${String(index).padStart(20, '0')}`);
	await Promise.all(
		ids.map(async (id) => {
			await store.reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt: EXPIRES });
			await store.publish(record(id));
			await ledger.record({ apiKeyId: 'owner', model: 'p-image', images: 1, costUsd: 0.0035, requestId: id });
		}),
	);
}

it('64 concurrent generations (reserve, publish, usage line each) share a few transactions instead of 192', async () => {
	const database = dataDir.openDatabase();
	database.pragma('wal_autocheckpoint = 0');
	walFrames(database);
	await storeConcurrently(new SqlFileMetadata(new SqliteAdapter(database)), new SqlUsageLedger(new SqliteAdapter(database), { log }), 64);
	// Every page a transaction touches is one frame; 192 separate commits would write at least 192.
	expect(walFrames(database)).toBeLessThan(40);
	const other = dataDir.openDatabase();
	expect(other.prepare('SELECT COUNT(*) AS n FROM files WHERE published = 1').get()).toEqual({ n: 64 });
	expect(other.prepare('SELECT COUNT(*) AS n FROM usage_lines').get()).toEqual({ n: 64 });
});

it('a write that fails rolls back alone and fails only its caller; the others in its group commit', async () => {
	const database = dataDir.openDatabase();
	const store = new SqlFileMetadata(new SqliteAdapter(database));
	const reserve = (id: string) => store.reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt: EXPIRES });
	const outcomes = await Promise.allSettled([reserve('first-0000000000000000000'), reserve('first-0000000000000000000'), reserve('third-0000000000000000000')]);
	expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
	expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
	expect(database.prepare('SELECT id FROM files ORDER BY id').all()).toEqual([{ id: 'first-0000000000000000000' }, { id: 'third-0000000000000000000' }]);
});

it('drain waits for every queued write to be committed before the database may close', async () => {
	const database = dataDir.openDatabase();
	const store = new SqlFileMetadata(new SqliteAdapter(database));
	const queued = Array.from({ length: 20 }, (_, index) =>
		store.reserve({ id: `drain-${String(index).padStart(20, '0')}`, storageKey: `drain-${index}.png`, ownerKeyId: 'owner', expiresAt: EXPIRES }),
	);
	await groupCommitOf(database).drain();
	database.close();
	await expect(Promise.all(queued)).resolves.toHaveLength(20);
	const other = dataDir.openDatabase();
	expect(other.prepare('SELECT COUNT(*) AS n FROM files').get()).toEqual({ n: 20 });
});

it('a group with a durable write commits with synchronous = FULL; one of reservations alone skips the sync, and the next durable one syncs again', async () => {
	const database = dataDir.openDatabase();
	const group = groupCommitOf(database);
	const synchronous = [{ sql: 'PRAGMA synchronous', values: [], row: true }];
	const mixed = await Promise.all([group.write(synchronous, { durable: false }), group.write(synchronous)]);
	const unsynced = await Promise.all([group.write(synchronous, { durable: false }), group.write(synchronous, { durable: false })]);
	// The thread sets the pragma only when it changes: a durable group after unsynced ones syncs again.
	const again = await group.write(synchronous);
	// 2 is FULL (SQLite syncs the log before the commit returns), 1 NORMAL.
	expect({ mixed, unsynced, again }).toEqual({ mixed: [{ synchronous: 2 }, { synchronous: 2 }], unsynced: [{ synchronous: 1 }, { synchronous: 1 }], again: { synchronous: 2 } });
});

it('databases of one process commit through one thread, each on its own connection; one closed leaves the others committing', async () => {
	const otherDir = mkdtempSync(join(tmpdir(), 'imagegen-sqlite-group-other-'));
	const first = dataDir.openDatabase();
	const second = openSqliteDatabase(otherDir);
	try {
		const reserve = (database: SqliteDatabase, id: string) =>
			new SqlFileMetadata(new SqliteAdapter(database)).reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt: EXPIRES });
		await Promise.all([reserve(first, 'first-0000000000000000000'), reserve(second, 'second-000000000000000000')]);
		expect(first.prepare('SELECT id FROM files').all()).toEqual([{ id: 'first-0000000000000000000' }]);
		expect(second.prepare('SELECT id FROM files').all()).toEqual([{ id: 'second-000000000000000000' }]);

		await groupCommitOf(first).close();
		first.close();
		// The thread's connection went with it: the last connection to close checkpoints and removes the log.
		expect(existsSync(`${first.name}-wal`)).toBe(false);
		await reserve(second, 'again-0000000000000000000');
		expect(second.prepare('SELECT COUNT(*) AS n FROM files').get()).toEqual({ n: 2 });
	} finally {
		await groupCommitOf(second).close();
		second.close();
		rmSync(otherDir, { recursive: true, force: true });
	}
});

it('a commit thread that dies fails the group it held; the next group starts a new thread and commits', async () => {
	const database = dataDir.openDatabase();
	const store = new SqlFileMetadata(new SqliteAdapter(database));
	await store.reserve({ id: 'before-000000000000000000', storageKey: 'before.png', ownerKeyId: 'owner', expiresAt: EXPIRES });
	// A message the thread cannot even answer (no list of writes): it throws outside its guard and exits.
	const broken = { length: 1 } as unknown as Parameters<typeof commitThread.commit>[2];
	const [outcome] = await commitThread.commit(-1, { file: database.name, busyTimeoutMs: 0 }, broken, true);
	expect(outcome).toMatchObject({ ok: false, error: { message: expect.stringMatching(/commit thread (failed|stopped)/) } });
	await commitThread.close(-1);
	await store.reserve({ id: 'after-0000000000000000000', storageKey: 'after.png', ownerKeyId: 'owner', expiresAt: EXPIRES });
	expect(database.prepare('SELECT id FROM files ORDER BY id').all()).toEqual([{ id: 'after-0000000000000000000' }, { id: 'before-000000000000000000' }]);
});

it('a write handed in after the database closed fails its caller instead of the process', async () => {
	const database = dataDir.openDatabase();
	const store = new SqlFileMetadata(new SqliteAdapter(database));
	database.close();
	await expect(store.release('gone-000000000000000000000')).rejects.toThrow(/closed|not open/i);
});

it('a write handed in while the connection closes is refused, and the close still ends', async () => {
	const database = dataDir.openDatabase();
	const commits = groupCommitOf(database);
	await commits.write([{ sql: 'CREATE TABLE late (x INTEGER)', values: [] }]);
	const closed = commits.close();
	// After the drain, while the commit thread closes its connection: a timer's write, late.
	await new Promise((resolve) => setImmediate(resolve));
	const late = commits.write([{ sql: 'INSERT INTO late (x) VALUES (1)', values: [] }]);
	await expect(late).rejects.toThrow(/closing/);
	await expect(Promise.race([closed.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still closing'), 5_000))])).resolves.toBe('closed');
	expect(database.prepare('SELECT count(*) AS rows FROM late').get()).toEqual({ rows: 0 });
});
