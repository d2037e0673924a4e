// History benchmark: a service that has run for months must still start fast and small. Writes an
// idempotency history (answers with base64 images, into the data dir's database) and a usage
// ledger spread over many days (retried appends repeated, a torn last line), straight to files;
// then starts the real CLI on each, twice (the first start rolls days up, the second reads the
// result), and measures start time and peak
// RSS against the same server on an empty data dir, measured in the same run. Every start is
// checked: sampled replays byte for byte (SHA-256 of the bytes), usage totals exact per key, day
// and model. Everything lives in a temp dir that is removed afterwards.
//
//   node bench/history.mjs [--answers-mb 600] [--ledger-lines 4000000] [--days 60] [--heap-mb N] [--json]
//
// Small sizes make a quick exactness check (test/server/history.test.ts); the big ones are the bench.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, SERVER_CLI, round } from './lib.mjs';

const require = createRequire(import.meta.url);
const dist = join(ROOT, 'server', 'dist', 'server', 'src');
const { fingerprintJson } = require(join(dist, 'idempotency', 'idempotency.js'));
const { apiKeyIdOf } = require(join(dist, 'auth.js'));
const { openSqliteDatabase } = require(join(dist, 'sqlite', 'database.js'));

const KEYS = ['history-key-a-0123456789', 'history-key-b-0123456789', 'history-key-c-0123456789'];
const ROUTE = '/v1/images/generations';
const JSON_TYPE = 'application/json; charset=utf-8';
const PRICES = { 'p-image': 0.0035, 'p-image-edit': 0.012, 'textimage-v2': 0.05 };
const DAY_MS = 86_400_000;

/** A writer that waits for the disk when its buffer is full, so generating never holds the data. */
function lineWriter(file) {
	const stream = createWriteStream(file, { mode: 0o600 });
	return {
		write: async (text) => {
			if (!stream.write(text)) await new Promise((resolve) => stream.once('drain', resolve));
		},
		end: () => new Promise((resolve, reject) => stream.end((error) => (error ? reject(error) : resolve()))),
	};
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * `answerMb` of idempotent answers: one in ten a generation answered inline (≈ 1 MB of base64),
 * the rest hosted URLs, written straight into the data dir's database as the service keeps them.
 */
export async function writeIdempotencyHistory(dataDir, { answerMb }) {
	const database = openSqliteDatabase(dataDir);
	// Only this writer's connection: the history is made up anyway, and a crash would only redo it.
	database.pragma('synchronous = OFF');
	const insert = database.prepare(
		'INSERT INTO idempotency_keys (api_key_id, key, fingerprint, completed, lease_until, expires_at, status, content_type, body) VALUES (?, ?, ?, 1, 0, ?, 200, ?, ?)',
	);
	const insertMany = database.transaction((rows) => {
		for (const row of rows) insert.run(...row);
	});
	const expiresAt = Date.now() + 23 * 3_600_000;
	const expiresIso = new Date(expiresAt).toISOString();
	const image = Buffer.alloc(768 * 1024, 7).toString('base64');
	const samples = [];
	let bytes = 0;
	let answers = 0;
	let batch = [];
	for (let index = 0; bytes < answerMb * 1024 * 1024; index++) {
		const apiKey = KEYS[index % KEYS.length];
		const request = { model: 'p-image', prompt: `history ${index}`, seed: index };
		const inline = index % 10 === 0;
		const body = inline
			? `{"created":${1_700_000_000 + index},"data":[{"b64_json":"${index}${image}","seed":${index}}]}`
			: `{"created":${1_700_000_000 + index},"data":[{"url":"http://127.0.0.1:1/files/${String(index).padStart(22, 'A')}.png","expires_at":"${expiresIso}","seed":${index}}],"note":"é ✓ \\u2028"}`;
		const key = `history-${index}`;
		batch.push([apiKeyIdOf(apiKey), key, fingerprintJson('POST', ROUTE, request), expiresAt, JSON_TYPE, Buffer.from(body, 'utf8')]);
		if (batch.length >= 2_000) {
			insertMany(batch);
			batch = [];
		}
		bytes += body.length;
		answers++;
		if (index % 97 === 0 || index < 3) samples.push({ apiKey, key, request, sha256: sha256(Buffer.from(body, 'utf8')), size: Buffer.byteLength(body) });
	}
	insertMany(batch);
	database.close();
	return { answers, bodyMb: round(bytes / 1024 / 1024, 1), samples: samples.slice(-40).concat(samples.slice(0, 3)) };
}

/** `lines` usage lines over `days` days ending today, every 1000th repeated (a retried append), a torn last line. */
export async function writeUsageHistory(dataDir, { lines, days }) {
	const out = lineWriter(join(dataDir, 'usage.jsonl'));
	const models = Object.keys(PRICES);
	const start = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`) - (days - 1) * DAY_MS;
	const step = (days * DAY_MS - 60_000) / lines;
	/** key → "date model" → { images, pico } */
	const expected = new Map(KEYS.map((key) => [apiKeyIdOf(key), new Map()]));
	let batch = '';
	for (let index = 0; index < lines; index++) {
		const key = apiKeyIdOf(KEYS[index % KEYS.length]);
		const model = models[index % models.length];
		const images = 1 + (index % 4);
		const costUsd = PRICES[model] * images;
		const t = new Date(start + Math.floor(index * step)).toISOString();
		const text = `${JSON.stringify({ t, key, model, images, cost_usd: costUsd, id: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}` })}\n`;
		batch += index % 1000 === 999 ? text + text : text;
		const row = `${t.slice(0, 10)} ${model}`;
		const totals = expected.get(key);
		const sum = totals.get(row) ?? { images: 0, pico: 0n };
		sum.images += images;
		sum.pico += BigInt(Math.round(costUsd * 1e12));
		totals.set(row, sum);
		if (batch.length > 256 * 1024) {
			await out.write(batch);
			batch = '';
		}
	}
	await out.write(`${batch}{"t":"2030-01-01T00:00:00.000Z","key":"`);
	await out.end();
	return { lines, days, expected };
}

/** Starts the CLI; answers when it listens, with the start time in ms. */
function startServer(dataDir, heapMb) {
	const nodeArgs = heapMb ? [`--max-old-space-size=${heapMb}`] : [];
	const args = [...nodeArgs, SERVER_CLI, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--api-keys', KEYS.join(','), '--rate-limit-per-minute', '0', '--log-level', 'warn'];
	const started = process.hrtime.bigint();
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
		let output = '';
		const onData = (chunk) => {
			output += chunk;
			const match = /listening on (http:\/\/[^\s]+)/.exec(output);
			if (!match) return;
			child.stdout.off('data', onData);
			resolve({
				origin: match[1].replace(/\/$/, ''),
				startMs: round(Number(process.hrtime.bigint() - started) / 1e6, 0),
				peakRssMb: () => round(Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024, 1),
				stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM')))),
			});
		};
		child.stdout.on('data', onData);
		child.stderr.on('data', (chunk) => (output += chunk));
		child.once('exit', (code) => reject(new Error(`imagegen-server exited with ${code} before it listened:\n${output.slice(-2000)}`)));
	});
}

async function checkReplays(server, samples) {
	let matched = 0;
	for (const sample of samples) {
		const response = await fetch(`${server.origin}${ROUTE}`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sample.apiKey}`, 'content-type': 'application/json', 'idempotency-key': sample.key },
			body: JSON.stringify(sample.request),
		});
		const bytes = Buffer.from(await response.arrayBuffer());
		if (response.status === 200 && response.headers.get('idempotent-replayed') === 'true' && bytes.length === sample.size && sha256(bytes) === sample.sha256) matched++;
	}
	return matched;
}

async function checkTotals(server, expected) {
	let rows = 0;
	let mismatches = 0;
	for (const apiKey of KEYS) {
		const response = await fetch(`${server.origin}/v1/usage`, { headers: { authorization: `Bearer ${apiKey}` } });
		const usage = await response.json();
		const want = [...expected.get(apiKeyIdOf(apiKey))]
			.map(([row, sum]) => ({ date: row.slice(0, 10), model: row.slice(11), images: sum.images, cost_usd: Number((sum.pico + 500_000n) / 1_000_000n) / 1e6 }))
			.sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model));
		rows += want.length;
		if (JSON.stringify(usage.data) !== JSON.stringify(want)) mismatches++;
		const images = want.reduce((sum, row) => sum + row.images, 0);
		if (usage.total.images !== images) mismatches++;
	}
	return { rows, exact: mismatches === 0 };
}

async function measure(dataDir, heapMb, check) {
	const server = await startServer(dataDir, heapMb);
	try {
		const checked = await check(server);
		return { startMs: server.startMs, peakRssMb: server.peakRssMb(), ...checked };
	} finally {
		await server.stop();
	}
}

export async function historyBench({ answerMb = 600, ledgerLines = 4_000_000, days = 60, heapMb } = {}) {
	const root = mkdtempSync(join(tmpdir(), 'imagegen-history-bench-'));
	try {
		const dir = (name) => {
			const path = join(root, name);
			rmSync(path, { recursive: true, force: true });
			return mkdtempSync(`${path}-`);
		};
		const baseline = await measure(dir('empty'), heapMb, async () => ({}));

		const idempotencyDir = dir('idempotency');
		const generatedAnswers = await writeIdempotencyHistory(idempotencyDir, { answerMb });
		const replays = (server) => checkReplays(server, generatedAnswers.samples).then((matched) => ({ replaysMatched: matched, replaysChecked: generatedAnswers.samples.length }));
		const idempotencyFirst = await measure(idempotencyDir, heapMb, replays);
		const idempotencyAgain = await measure(idempotencyDir, heapMb, replays);
		rmSync(idempotencyDir, { recursive: true, force: true });

		const ledgerDir = dir('ledger');
		const generatedUsage = await writeUsageHistory(ledgerDir, { lines: ledgerLines, days });
		const totals = (server) => checkTotals(server, generatedUsage.expected);
		const ledgerFirst = await measure(ledgerDir, heapMb, totals);
		const ledgerAgain = await measure(ledgerDir, heapMb, totals);
		rmSync(ledgerDir, { recursive: true, force: true });

		const ratios = (run) => ({ ...run, startRatio: round(run.startMs / baseline.startMs, 2), rssRatio: round(run.peakRssMb / baseline.peakRssMb, 2) });
		return {
			baseline,
			idempotency: { answers: generatedAnswers.answers, bodyMb: generatedAnswers.bodyMb, first: ratios(idempotencyFirst), again: ratios(idempotencyAgain) },
			ledger: { lines: ledgerLines, days, first: ratios(ledgerFirst), again: ratios(ledgerAgain) },
		};
	} finally {
		rmSync(root, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const option = (name, fallback) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
	const result = await historyBench({
		answerMb: option('--answers-mb', 600),
		ledgerLines: option('--ledger-lines', 4_000_000),
		days: option('--days', 60),
		heapMb: option('--heap-mb', undefined),
	});
	process.stdout.write(`${JSON.stringify(result)}\n`);
}
