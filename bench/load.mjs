// Load: 2,000 mixed requests at concurrency 64 against the sandbox service — generations, JSON
// uploads, hosted-file reads and catalog reads in one rotation per connection. Zero errors allowed.
import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { API_KEY, round, startImagegenServer } from './lib.mjs';

export async function loadBench({ connections = 64, amount = 2000 } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-load-'));
	const server = await startImagegenServer(dataDir);
	try {
		const auth = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
		const png = (await sharp({ create: { width: 64, height: 48, channels: 3, background: '#a03050' } }).png().toBuffer()).toString('base64');
		const hosted = await (await fetch(`${server.origin}/v1/uploads`, { method: 'POST', headers: auth, body: JSON.stringify({ image: png }) })).json();
		const filePath = new URL(hosted.imageUrl).pathname;
		const generation = { method: 'POST', path: '/v1/images/generations', headers: auth, body: JSON.stringify({ model: 'p-image', prompt: 'load', aspect_ratio: '16:9', output_format: 'jpeg' }) };
		const upload = { method: 'POST', path: '/v1/uploads', headers: auth, body: JSON.stringify({ image: png, output_format: 'webp' }) };
		const file = { method: 'GET', path: filePath };
		const models = { method: 'GET', path: '/v1/models', headers: auth };
		const started = performance.now();
		const run = await autocannon({
			url: server.origin,
			connections,
			amount,
			timeout: 60,
			requests: [generation, upload, file, models, upload, file, generation, file, upload, file],
		});
		return {
			connections,
			requests: run.requests.total,
			errors: run.errors + run.timeouts + run.non2xx,
			rps: round(run.requests.total / ((performance.now() - started) / 1000), 1),
			p50Ms: run.latency.p50,
			p99Ms: run.latency.p99,
		};
	} finally {
		await server.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}
