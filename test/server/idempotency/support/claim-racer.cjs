// A process of its own on a data dir: at the agreed instant, claims one idempotency key over and
// over through the built store, and sends back the outcomes. Run by idempotency-store-sqlite.test.ts.
'use strict';
const { join } = require('node:path');

const dist = join(__dirname, '..', '..', '..', '..', 'server', 'dist', 'server', 'src');
const { openSqliteDatabase } = require(join(dist, 'db', 'sqlite', 'database.js'));
const { SqliteAdapter } = require(join(dist, 'db', 'sqlite', 'sqlite-adapter.js'));
const { SqlIdempotencyStore } = require(join(dist, 'idempotency', 'sql-idempotency-store.js'));

const [dataDir, key, attempts, startAt] = process.argv.slice(2);
const adapter = new SqliteAdapter(openSqliteDatabase(dataDir));
const store = new SqlIdempotencyStore(adapter);
const claim = { apiKeyId: 'owner', key, fingerprint: 'f'.repeat(64), expiresAt: new Date(Date.now() + 3_600_000), leaseUntil: new Date(Date.now() + 600_000) };

setTimeout(async () => {
	const outcomes = [];
	for (let attempt = 0; attempt < Number(attempts); attempt += 1) outcomes.push((await store.claim(claim)).state);
	await adapter.close();
	process.send(outcomes, () => process.exit(0));
}, Math.max(0, Number(startAt) - Date.now()));
