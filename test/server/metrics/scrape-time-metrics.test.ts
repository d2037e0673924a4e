/**
 * The families /metrics reads at each scrape, over the service on a data dir: the outbox's pending
 * deliveries (the service's own and another process's on the same database), the embedded
 * database's reachability and condition (ok, then damaged once a request met a damaged page) and
 * the data dir's file system, each checked against what it stands for.
 */
import { closeSync, openSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlOutboxStore } from '../../../server/src/webhooks/sql-outbox-store';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, eventually, postJson } from '../support/http';
import { startReceiver, type Receiver } from '../support/webhook-receiver';
import { scrape } from './support/scrape';

const ADMIN_KEY = 'admin-key-0123456789abcdef';

let server: InProcessServer;
let receiver: Receiver;

beforeEach(async () => {
	receiver = await startReceiver();
	server = await startInProcessServer({ args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--allow-private-urls', '--webhook-allow-private'] });
});

afterEach(async () => {
	await server?.stop({ removeData: true });
	await receiver?.close();
});

const metrics = () => scrape(server, ADMIN_KEY);

it('imagegen_webhook_outbox_pending: every delivery still owed, whichever process enqueued it, read at each scrape', async () => {
	expect((await metrics()).value('imagegen_webhook_outbox_pending')).toBe(0);
	receiver.answer('hang');
	const created = await call(server, '/v1/images/generations', {
		method: 'POST',
		headers: { prefer: 'respond-async', 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse', response_format: 'url', webhook_url: receiver.url }),
	});
	expect(created.status).toBe(202);
	// A generation, its marking and the job's end before the attempt: slow on a busy machine.
	expect(await eventually(() => receiver.received.length === 1, 30_000)).toBe(true);
	// Its attempt hangs: the delivery is still owed.
	expect((await metrics()).value('imagegen_webhook_outbox_pending')).toBe(1);

	// Another process on the data dir enqueues one too: the count is the database's, not this process's.
	const other = openSqliteDatabase(server.dataDir);
	try {
		const store = new SqlOutboxStore(new SqliteAdapter(other));
		expect(await store.enqueue({ id: 'msg_other_process', url: receiver.url, signingKeyId: null, body: '{}', eventType: 'budget.threshold' }, Date.now())).toBe(true);
	} finally {
		await groupCommitOf(other).close();
		other.close();
	}
	expect((await metrics()).value('imagegen_webhook_outbox_pending')).toBe(2);
});

it('imagegen_database_up and imagegen_database_condition: ok, then damaged once a request met a damaged page', async () => {
	const before = await metrics();
	expect(before.value('imagegen_database_up')).toBe(1);
	expect(before.samples('imagegen_database_condition').sort((a, b) => a.labels.state!.localeCompare(b.labels.state!))).toEqual([
		{ labels: { state: 'damaged' }, value: 0 },
		{ labels: { state: 'full' }, value: 0 },
		{ labels: { state: 'ok' }, value: 1 },
	]);

	damageIdempotencyTable(join(server.dataDir, 'imagegen.db'));
	const generation = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'meets the damage' }, { headers: { 'idempotency-key': 'key-1500' } });
	expect(generation.status).toBe(500);

	const after = await metrics();
	expect(after.value('imagegen_database_condition', { state: 'damaged' })).toBe(1);
	expect(after.value('imagegen_database_condition', { state: 'ok' })).toBe(0);
	expect(after.value('imagegen_database_condition', { state: 'full' })).toBe(0);
	// The damage is in one table: the database still answers, and so do the scrape's own reads.
	expect(after.value('imagegen_database_up')).toBe(1);
	expect(after.value('imagegen_webhook_outbox_pending')).toBe(0);
});

it('imagegen_data_dir_free_bytes and imagegen_data_dir_size_bytes: the data dir’s file system, as statfs tells it', async () => {
	const freeNow = () => {
		const stats = statfsSync(server.dataDir);
		return { free: stats.bavail * stats.bsize, size: stats.blocks * stats.bsize };
	};
	const before = freeNow();
	const scraped = await metrics();
	const after = freeNow();
	expect(scraped.value('imagegen_data_dir_size_bytes')).toBe(after.size);
	// Free space moves with whatever else writes to this file system meanwhile: it is read between the two.
	const free = scraped.value('imagegen_data_dir_free_bytes')!;
	const slack = 64 * 2 ** 20;
	expect(free).toBeGreaterThanOrEqual(Math.min(before.free, after.free) - slack);
	expect(free).toBeLessThanOrEqual(Math.max(before.free, after.free) + slack);
	expect(free).toBeGreaterThan(0);
});

/** Rows over several pages of the idempotency table, then garbage over its leaf pages in the file. */
function damageIdempotencyTable(file: string): void {
	const database = new Database(file);
	const insert = database.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, lease_until, expires_at) VALUES (?, ?, ?, ?, ?)');
	database.transaction(() => {
		for (let row = 0; row < 2_000; row++) insert.run('seeded', `key-${row}`, 'f'.repeat(64), 0, Date.now() + 86_400_000);
	})();
	database.pragma('wal_checkpoint(TRUNCATE)');
	const pageSize = database.pragma('page_size', { simple: true }) as number;
	const leaves = database.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 'idempotency_keys' AND pagetype = 'leaf'").all();
	database.close();
	expect(leaves.length).toBeGreaterThan(3);
	const descriptor = openSync(file, 'r+');
	try {
		for (const { pageno } of leaves) writeSync(descriptor, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (pageno - 1) * pageSize);
	} finally {
		closeSync(descriptor);
	}
}
