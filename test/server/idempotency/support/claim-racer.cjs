// A process of its own on a data dir: at the agreed instant, claims one idempotency key over and
// over through the built store, and sends back the outcomes. Run by sqlite-idempotency-store.test.ts.
'use strict';
const { join } = require('node:path');

const dist = join(__dirname, '..', '..', '..', '..', 'server', 'dist', 'server', 'src');
const { openSqliteDatabase } = require(join(dist, 'sqlite', 'database.js'));
const { SqliteIdempotencyStore } = require(join(dist, 'idempotency', 'sqlite-idempotency-store.js'));

const [dataDir, key, attempts, startAt] = process.argv.slice(2);
const database = openSqliteDatabase(dataDir);
const store = new SqliteIdempotencyStore(database);
const claim = { apiKeyId: 'owner', key, fingerprint: 'f'.repeat(64), expiresAt: new Date(Date.now() + 3_600_000), leaseUntil: new Date(Date.now() + 600_000) };

setTimeout(async () => {
	const outcomes = [];
	for (let attempt = 0; attempt < Number(attempts); attempt += 1) outcomes.push((await store.claim(claim)).state);
	database.close();
	process.send(outcomes, () => process.exit(0));
}, Math.max(0, Number(startAt) - Date.now()));
