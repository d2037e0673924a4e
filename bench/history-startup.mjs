// History start-up benchmark: a service that has run for months must still start fast and small.
// Fills a data dir's database straight with SQL (bench/support/history-fill.mjs): idempotent
// answers in retention (hosted URLs, one in RECORDS_PER_INLINE an inline image) and usage lines
// spread over many days. Then starts the real CLI on it twice and measures start time and peak RSS
// against the same server on an empty data dir, in the same run. Every start is checked: sampled
// answers replay byte for byte (SHA-256), `GET /v1/usage` rows and totals are exact. Everything
// lives in a temp dir that is removed afterwards.
//
//   node bench/history-startup.mjs [--idempotency-records 2000000] [--usage-lines 4000000] [--days 60]
//
// When the database has no tables for this history yet, it says so and measures nothing.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, peakRssMb, round, startImagegenServer } from './lib.mjs';
import { insertIdempotencyRecords, insertUsageLines, missingHistoryColumns } from './support/history-fill.mjs';

const require = createRequire(import.meta.url);
const dist = join(ROOT, 'server', 'dist', 'server', 'src');
const { openSqliteDatabase, databasePath } = require(join(dist, 'db', 'sqlite', 'database.js'));
const { fingerprintJson } = require(join(dist, 'idempotency', 'idempotency.js'));
const { apiKeyIdOf } = require(join(dist, 'keys', 'authenticate.js'));

const ROUTE = '/v1/images/generations';
const JSON_TYPE = 'application/json; charset=utf-8';
const PRICES = { 'p-image': 0.0035, 'p-image-edit': 0.012, 'textimage-v2': 0.05 };
const DAY_MS = 86_400_000;
const RECORDS_PER_INLINE = 20_000;
const SAMPLES_EVERY = 10_000;

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Completed answers that expire within the day; `samples` keeps a few for the replay check. */
function* idempotencyRecords(count, samples) {
	const apiKeyId = apiKeyIdOf(API_KEY);
	const expiresAtMs = Date.now() + 23 * 3_600_000;
	const expiresAt = new Date(expiresAtMs).toISOString();
	const image = Buffer.alloc(256 * 1024, 7).toString('base64');
	for (let index = 0; index < count; index++) {
		const request = { model: 'p-image', prompt: `history ${index}`, seed: index };
		const text =
			index % RECORDS_PER_INLINE === 0
				? `{"created":${1_700_000_000 + index},"data":[{"b64_json":"${index}${image}","seed":${index}}]}`
				: `{"created":${1_700_000_000 + index},"data":[{"url":"http://127.0.0.1:1/files/${String(index).padStart(22, 'A')}.png","expires_at":"${expiresAt}","seed":${index}}],"note":"é ✓ \\u2028"}`;
		const body = Buffer.from(text, 'utf8');
		const key = `history-${index}`;
		if (index % SAMPLES_EVERY <= 1) samples.push({ key, request, sha256: sha256(body), size: body.length });
		yield { apiKeyId, key, fingerprint: fingerprintJson('POST', ROUTE, request), expiresAtMs, status: 200, contentType: JSON_TYPE, body };
	}
}

/** `count` lines over `days` days ending now; `expected` gathers exact totals per day and model (micro-dollars). */
function* usageLines(count, days, expected) {
	const apiKeyId = apiKeyIdOf(API_KEY);
	const models = Object.keys(PRICES);
	const start = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`) - (days - 1) * DAY_MS;
	const step = (days * DAY_MS - 60_000) / count;
	for (let index = 0; index < count; index++) {
		const model = models[index % models.length];
		const images = 1 + (index % 4);
		const costUsd = PRICES[model] * images;
		const atMs = start + Math.floor(index * step);
		const row = `${new Date(atMs).toISOString().slice(0, 10)} ${model}`;
		const sum = expected.get(row) ?? { images: 0, micros: 0 };
		sum.images += images;
		sum.micros += Math.round(costUsd * 1e6);
		expected.set(row, sum);
		yield { requestId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`, apiKeyId, atMs, model, images, costUsd };
	}
}

async function checkReplays(origin, samples) {
	let matched = 0;
	for (const sample of samples) {
		const response = await fetch(`${origin}${ROUTE}`, {
			method: 'POST',
			headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': sample.key },
			body: JSON.stringify(sample.request),
		});
		const bytes = Buffer.from(await response.arrayBuffer());
		if (response.status === 200 && response.headers.get('idempotent-replayed') === 'true' && bytes.length === sample.size && sha256(bytes) === sample.sha256) matched++;
	}
	return { replaysMatched: matched, replaysChecked: samples.length };
}

async function checkTotals(origin, expected) {
	const response = await fetch(`${origin}/v1/usage`, { headers: { authorization: `Bearer ${API_KEY}` } });
	const usage = await response.json();
	const want = [...expected]
		.map(([row, sum]) => ({ date: row.slice(0, 10), model: row.slice(11), images: sum.images, cost_usd: sum.micros / 1e6 }))
		.sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model));
	const images = want.reduce((total, row) => total + row.images, 0);
	return { usageRows: want.length, usageExact: JSON.stringify(usage.data) === JSON.stringify(want) && usage.total?.images === images };
}

/** One start: the time until the ready line, peak RSS once the checks ran. */
async function measure(dataDir, check) {
	const started = process.hrtime.bigint();
	const server = await startImagegenServer(dataDir);
	const startMs = round(Number(process.hrtime.bigint() - started) / 1e6, 0);
	try {
		const checked = await check(server.origin);
		return { startMs, peakRssMb: round(peakRssMb(server.pid), 1), ...checked };
	} finally {
		await server.stop();
	}
}

export async function historyStartupBench({ idempotencyRecords: recordCount = 2_000_000, usageLines: lineCount = 4_000_000, days = 60 } = {}) {
	const root = mkdtempSync(join(tmpdir(), 'imagegen-history-startup-'));
	try {
		const dataDir = mkdtempSync(join(root, 'history-'));
		const database = openSqliteDatabase(dataDir);
		const samples = [];
		const expected = new Map();
		let fillMs;
		try {
			const missing = missingHistoryColumns(database);
			if (missing.length > 0) return { skipped: `the database has no place for this history yet (missing: ${missing.join(', ')}); adjust bench/support/history-fill.mjs to the schema` };
			const filling = Date.now();
			insertIdempotencyRecords(database, idempotencyRecords(recordCount, samples));
			insertUsageLines(database, usageLines(lineCount, days, expected));
			database.pragma('wal_checkpoint(TRUNCATE)');
			fillMs = Date.now() - filling;
		} finally {
			database.close();
		}
		const databaseMb = round(statSync(databasePath(dataDir)).size / 1024 / 1024, 1);
		const baseline = await measure(mkdtempSync(join(root, 'empty-')), async () => ({}));
		const check = async (origin) => ({ ...(await checkReplays(origin, samples)), ...(await checkTotals(origin, expected)) });
		const ratios = (run) => ({ ...run, startRatio: round(run.startMs / baseline.startMs, 2), rssRatio: round(run.peakRssMb / baseline.peakRssMb, 2) });
		const first = ratios(await measure(dataDir, check));
		const again = ratios(await measure(dataDir, check));
		return { baseline, history: { idempotencyRecords: recordCount, usageLines: lineCount, days, databaseMb, fillMs }, first, again };
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const option = (name, fallback) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
	const result = await historyStartupBench({
		idempotencyRecords: option('--idempotency-records', 2_000_000),
		usageLines: option('--usage-lines', 4_000_000),
		days: option('--days', 60),
	});
	if (result.skipped) process.stderr.write(`history-startup: skipped: ${result.skipped}\n`);
	process.stdout.write(`${JSON.stringify(result)}\n`);
}
