// The data dir's stores alone, no HTTP: 16 writers, each a hosted generation's writes (a
// reservation, a publish and a usage line, through SqlFileMetadata and SqlUsageLedger), for
// a few seconds. Generations per second, their p50, and the event loop's delay p99 meanwhile: what
// every other request on the service waits behind while the group commit syncs the disk.
// `node bench/stores.mjs [dist]` runs it alone, against another build's dist if given.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ROOT, round } from './lib.mjs';

export async function storesBench({ dist = join(ROOT, 'server', 'dist'), writers = 16, seconds = 4 } = {}) {
	const load = createRequire(join(dist, 'server', 'src', 'index.js'));
	const { openSqliteDatabase } = load('./db/sqlite/database.js');
	const { SqlFileMetadata } = load('./storage/sql-file-metadata.js');
	const { SqliteAdapter } = load('./db/sqlite/sqlite-adapter.js');
	const { SqlUsageLedger } = load('./usage/sql-usage-ledger.js');
	const { groupCommitOf } = load('./db/sqlite/group-commit.js');
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-stores-'));
	const database = openSqliteDatabase(dataDir, { serving: true });
	const files = new SqlFileMetadata(new SqliteAdapter(database));
	const ledger = new SqlUsageLedger(new SqliteAdapter(database), { log: { error() {}, info() {} } });
	const expiresAt = new Date(Date.now() + 3_600_000);
	const latencies = [];
	let serial = 0;
	const generation = async () => {
		const id = `bench${String(serial++).padStart(20, '0')}`;
		const started = performance.now();
		await files.reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt });
		const record = { id, name: `${id}.png`, storageKey: `${id}.png`, kind: 'image', mimeType: 'image/png', extension: 'png', size: 10, etag: `"${id}"`, ownerKeyId: 'owner', createdAt: new Date(), expiresAt };
		await files.publish(record, { durable: false });
		await ledger.record({ apiKeyId: 'owner', model: 'p-image', images: 1, costUsd: 0.0035, requestId: id });
		latencies.push(performance.now() - started);
	};
	const delay = monitorEventLoopDelay({ resolution: 1 });
	delay.enable();
	const until = performance.now() + seconds * 1000;
	await Promise.all(Array.from({ length: writers }, async () => {
		while (performance.now() < until) await generation();
	}));
	delay.disable();
	try {
		await ledger.close();
		const group = groupCommitOf(database);
		await (group.close ?? group.drain).call(group);
	} finally {
		database.close();
		rmSync(dataDir, { recursive: true, force: true });
	}
	latencies.sort((a, b) => a - b);
	return { perSecond: round(latencies.length / seconds), p50Ms: round(latencies[latencies.length >> 1]), loopP99Ms: round(delay.percentile(99) / 1e6) };
}

/**
 * The key store alone: 16 writers, each a generation on one budgeted key (its reservation, then
 * its settlement at a cost other than the price, so both write), on the data dir's database or on
 * PostgreSQL (`postgresUrl`). Generations per second and their p50: how much one busy key's
 * reservations, made one after another by every process, let through.
 */
export async function keyStoreBench({ dist = join(ROOT, 'server', 'dist'), postgresUrl, writers = 16, seconds = 4 } = {}) {
	const load = createRequire(join(dist, 'server', 'src', 'index.js'));
	const { SqlKeyStore } = load('./keys/sql-key-store.js');
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-keys-'));
	let adapter;
	if (postgresUrl) {
		adapter = await load('./db/postgres/postgres.js').openDatabase(postgresUrl);
	} else {
		adapter = new (load('./db/sqlite/sqlite-adapter.js').SqliteAdapter)(load('./db/sqlite/database.js').openSqliteDatabase(dataDir, { serving: true }));
		await adapter.start();
	}
	const keys = new SqlKeyStore(adapter);
	const keyId = `key_bench${Date.now()}`;
	const limitUsd = 1_000_000;
	await keys.create({ id: keyId, name: 'bench', prefix: 'bench', secretHash: keyId, previousSecretHash: null, previousValidUntil: null, createdAt: new Date(), expiresAt: null, blocked: false, revokedAt: null, models: null, rateLimitPerMinute: null, budget: { limitUsd, period: 'total' } });
	const latencies = [];
	let serial = 0;
	const generation = async () => {
		const id = `bench${String(serial++).padStart(20, '0')}`;
		const started = performance.now();
		const admission = await keys.reserve({ id, keyId, amountUsd: 0.0035, limitUsd, since: new Date(0) });
		if (!admission.admitted) throw new Error('keys bench: a reservation was refused');
		await keys.settle(id, 0.003);
		latencies.push(performance.now() - started);
	};
	const until = performance.now() + seconds * 1000;
	try {
		await Promise.all(Array.from({ length: writers }, async () => {
			while (performance.now() < until) await generation();
		}));
		const spentUsd = await keys.spent(keyId, new Date(0));
		if (Math.abs(spentUsd - latencies.length * 0.003) > 1e-9) throw new Error(`keys bench: spent ${spentUsd} for ${latencies.length} generations`);
	} finally {
		await adapter.close();
		rmSync(dataDir, { recursive: true, force: true });
	}
	latencies.sort((a, b) => a - b);
	return { perSecond: round(latencies.length / seconds), p50Ms: round(latencies[latencies.length >> 1]) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	const options = process.argv[2] ? { dist: process.argv[2] } : {};
	console.log(JSON.stringify({ stores: await storesBench(options), keysDataDir: await keyStoreBench(options) }));
}
