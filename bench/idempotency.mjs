// Idempotent replays: N generations with an Idempotency-Key each, through the `upstream` provider
// against a stand-in that counts calls and answers after a fixed delay (a model's latency), then
// the same N requests again. Every replay must cost no provider call; its latency, against the
// first call's measured in the same run, shows what a client's retry costs.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { API_KEY, percentile, round, startImagegenServer } from './lib.mjs';

/**
 * The stand-in lives in this process, so its call counter is read directly. Every call answers
 * `picture` (default: a plain 512 px PNG).
 */
export async function startCountingUpstream(delayMs, picture) {
	const png = picture ?? (await sharp({ create: { width: 512, height: 512, channels: 3, background: '#3050a0' } }).png().toBuffer());
	const answer = JSON.stringify({ created: 0, model: 'p-image', output_format: 'png', data: [{ b64_json: png.toString('base64') }], usage: { images: 1, cost_usd: 0.0035 } });
	const counter = { calls: 0 };
	const server = http.createServer((request, response) => {
		request.resume();
		request.on('end', () => {
			counter.calls++;
			setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end(answer), delayMs);
		});
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return { counter, origin: `http://127.0.0.1:${server.address().port}`, stop: () => new Promise((done) => (server.closeAllConnections(), server.close(done))) };
}

async function timedGeneration(url, key, index) {
	const started = performance.now();
	const response = await fetch(url, {
		method: 'POST',
		headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': key },
		body: JSON.stringify({ model: 'p-image', prompt: `A lighthouse, take ${index}`, response_format: 'url' }),
	});
	const body = await response.text();
	return { ms: performance.now() - started, status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', body };
}

export async function idempotencyBench({ requests = 50, upstreamDelayMs = 200 } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-idempotency-'));
	const upstream = await startCountingUpstream(upstreamDelayMs);
	const ours = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
	const url = `${ours.origin}/v1/images/generations`;
	const run = `${Date.now()}`;
	try {
		const firsts = [];
		for (let i = 0; i < requests; i++) firsts.push(await timedGeneration(url, `bench-${run}-${i}`, i));
		const callsAfterFirsts = upstream.counter.calls;
		const replays = [];
		for (let i = 0; i < requests; i++) replays.push(await timedGeneration(url, `bench-${run}-${i}`, i));
		const replayCalls = upstream.counter.calls - callsAfterFirsts;
		const errors = [...firsts, ...replays].filter((r) => r.status !== 200).length;
		const mismatched = replays.filter((r, i) => !r.replayed || r.body !== firsts[i].body).length;
		const p50 = (list) => round(percentile(list.map((r) => r.ms).sort((x, y) => x - y), 50), 1);
		const firstP50Ms = p50(firsts);
		const replayP50Ms = p50(replays);
		return { requests, upstreamDelayMs, firstCalls: callsAfterFirsts, replayCalls, firstP50Ms, replayP50Ms, ratio: round(replayP50Ms / firstP50Ms, 3), errors, mismatched };
	} finally {
		await Promise.all([ours.stop(), upstream.stop()]);
		rmSync(dataDir, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	process.stdout.write(`${JSON.stringify(await idempotencyBench())}\n`);
}
