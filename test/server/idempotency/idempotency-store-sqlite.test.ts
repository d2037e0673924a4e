/**
 * What the idempotency store does on the data dir's SQLite database beyond the contract: bodies kept as text beside a row, the
 * files an answer points at found by id, expired answers swept in batches with their pages given
 * back, and claims that stay atomic when several processes race on one data dir.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SWEEP_BATCH } from '../../../server/src/db/sweep';
import { SqlIdempotencyStore } from '../../../server/src/idempotency/sql-idempotency-store';
import type { IdempotencyClaim, StoredAnswer } from '../../../server/src/idempotency/idempotency-store';
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { useSqliteDataDir } from '../support/sqlite-data-dir';

jest.setTimeout(60_000);

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;

const dataDir = useSqliteDataDir('imagegen-sqlite-idempotency-');
function open(): { database: SqliteDatabase; store: SqlIdempotencyStore } {
	const database = dataDir.openDatabase();
	return { database, store: new SqlIdempotencyStore(new SqliteAdapter(database)) };
}

const claimOf = (key: string, overrides: Partial<IdempotencyClaim> = {}): IdempotencyClaim => ({
	apiKeyId: 'owner',
	key,
	fingerprint: 'f'.repeat(64),
	expiresAt: at(HOUR),
	leaseUntil: at(60_000),
	...overrides,
});
const answerOf = (body: string, fileIds?: string[]): StoredAnswer => ({ status: 200, contentType: 'application/json; charset=utf-8', body, ...(fileIds ? { fileIds } : {}) });

async function stored(store: SqlIdempotencyStore, key: string, answer: StoredAnswer, overrides: Partial<IdempotencyClaim> = {}): Promise<void> {
	expect(await store.claim(claimOf(key, overrides), T0)).toEqual({ state: 'claimed' });
	await store.complete(overrides.apiKeyId ?? 'owner', key, answer);
}

it('keeps the body as text of the exact characters, and the file ids as rows of their own', async () => {
	const { database, store } = open();
	const body = '{"data":[{"b64_json":"AAAA"}],"note":"é ✓ 🎨 \u2028"}\r\n ';
	await stored(store, 'one', answerOf(body, ['file-b', 'file-a']));
	const row = database.prepare("SELECT typeof(body) AS type, CAST(body AS BLOB) AS bytes FROM idempotency_keys WHERE key = 'one'").get() as { type: string; bytes: Buffer };
	expect(row.type).toBe('text');
	expect(row.bytes.equals(Buffer.from(body, 'utf8'))).toBe(true);
	const files = database.prepare('SELECT file_id FROM idempotency_files ORDER BY position').all() as Array<{ file_id: string }>;
	expect(files.map((file) => file.file_id)).toEqual(['file-b', 'file-a']);
	expect(await store.claim(claimOf('one'), at(1))).toEqual({ state: 'replay', answer: answerOf(body, ['file-b', 'file-a']) });
});

it("forgets the answers pointing at a deleted file, for good, and only that key's", async () => {
	const { store } = open();
	await stored(store, 'a', answerOf('a', ['file-1']));
	await stored(store, 'b', answerOf('b', ['file-2', 'file-1']));
	await stored(store, 'c', answerOf('c', ['file-3']));
	await stored(store, 'a', answerOf('other a', ['file-1']), { apiKeyId: 'other' });
	expect(await store.forgetFile('owner', 'file-1')).toBe(2);
	expect(await store.forgetFile('owner', 'file-1')).toBe(0);

	const restarted = open().store;
	expect(await restarted.claim(claimOf('a'), at(1))).toEqual({ state: 'claimed' });
	expect(await restarted.claim(claimOf('b'), at(1))).toEqual({ state: 'claimed' });
	expect((await restarted.claim(claimOf('c'), at(1))).state).toBe('replay');
	expect((await restarted.claim(claimOf('a', { apiKeyId: 'other' }), at(1))).state).toBe('replay');
});

it('a claim that takes over an expired answer drops that answer and its file ids', async () => {
	const { database, store } = open();
	await stored(store, 'k', answerOf('old', ['file-old']), { expiresAt: at(1000) });
	expect(await store.claim(claimOf('k', { fingerprint: 'e'.repeat(64), expiresAt: at(HOUR) }), at(1000))).toEqual({ state: 'claimed' });
	expect(database.prepare('SELECT count(*) AS n FROM idempotency_files').get()).toEqual({ n: 0 });
	expect(await store.forgetFile('owner', 'file-old')).toBe(0);
	expect(await store.claim(claimOf('k', { fingerprint: 'e'.repeat(64) }), at(1001))).toEqual({ state: 'in_progress' });
});

it('sweeps more than a batch of expired answers, and gives their pages back to the file system', async () => {
	const { database, store } = open();
	const body = 'x'.repeat(16 * 1024);
	const count = SWEEP_BATCH + 7;
	for (let index = 0; index < count; index += 1) await stored(store, `old-${index}`, answerOf(body, [`file-${index}`]), { expiresAt: at(1000) });
	await stored(store, 'live', answerOf('live'), { expiresAt: at(HOUR) });
	const pagesWhenFull = database.pragma('page_count', { simple: true }) as number;

	expect(await store.sweep(at(2000))).toBe(count);
	expect(database.prepare('SELECT count(*) AS n FROM idempotency_files').get()).toEqual({ n: 0 });
	expect(database.pragma('freelist_count', { simple: true })).toBe(0);
	const pagesAfterSweep = database.pragma('page_count', { simple: true }) as number;
	expect(pagesAfterSweep).toBeLessThan(pagesWhenFull / 10);
	expect(await store.claim(claimOf('live'), at(2000))).toEqual({ state: 'replay', answer: answerOf('live') });
});

it('grants one claim of a key raced by several processes on one data dir', async () => {
	open();
	const racers = 4;
	const worker = join(__dirname, 'support', 'claim-racer.cjs');
	const startAt = String(Date.now() + 2000);
	const outcomes = await Promise.all(
		Array.from(
			{ length: racers },
			() =>
				new Promise<string[]>((resolve, reject) => {
					const child = fork(worker, [dataDir.path(), 'raced-key', '25', startAt], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
					child.once('message', (message) => resolve(message as string[]));
					child.once('error', reject);
					child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`claim racer exited with ${code}`))));
				}),
		),
	);
	const all = outcomes.flat();
	expect(all).toHaveLength(racers * 25);
	expect(all.filter((state) => state === 'claimed')).toHaveLength(1);
	expect(all.filter((state) => state === 'in_progress')).toHaveLength(racers * 25 - 1);
});
