/**
 * The ImageGen node in n8n's engine: 100 items against a model host that takes 300 ms per image
 * (the `upstream` provider in front of a delayed host), at concurrency 1 and 10. The ideal wall
 * time is ceil(items / concurrency) × 300 ms; the ratio to it is what the node and service add.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

import { startServer } from '../test/helpers/server';
import { IMAGE_GEN, runWorkflow } from '../test/nodes/support/engine';

const LATENCY_MS = 300;

/** A host implementing this service's API that answers every generation after LATENCY_MS. */
async function startSlowHost(): Promise<{ origin: string; stop(): Promise<void> }> {
	const png = await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#3050a0' } }).png().toBuffer();
	const answer = JSON.stringify({ created: 0, model: 'p-image', output_format: 'png', data: [{ b64_json: png.toString('base64') }], usage: { images: 1, cost_usd: 0 } });
	const server = http.createServer((request, response) => {
		request.resume();
		request.on('end', () => setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end(answer), LATENCY_MS));
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		stop: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
	};
}

export async function nodesBench(items = 100, concurrencies = [1, 10]) {
	const host = await startSlowHost();
	const server = await startServer({
		args: ['--providers', 'p-image=upstream', '--rate-limit-per-minute', '0', '--log-level', 'warn'],
		env: { UPSTREAM_BASE_URL: `${host.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' },
	});
	const results = [];
	try {
		for (const concurrency of concurrencies) {
			const seed = Array.from({ length: items }, (_, index) => ({ json: { prompt: `item ${index}` } }));
			const started = Date.now();
			const run = await runWorkflow({
				credentials: { apiKey: server.apiKey, baseUrl: server.baseUrl },
				seed,
				nodes: [{ name: 'ImageGen', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: '={{ $json.prompt }}', options: { concurrency, download: false } } }],
			});
			const wallMs = Date.now() - started;
			const output = run.output('ImageGen');
			if (run.error() || output.length !== items) throw new Error(`the node run failed: ${run.error()?.message ?? `${output.length} items`}`);
			const idealMs = Math.ceil(items / concurrency) * LATENCY_MS;
			results.push({ items, concurrency, wallMs, idealMs, ratio: Math.round((wallMs / idealMs) * 100) / 100 });
		}
	} finally {
		await Promise.all([server.stop({ removeData: true }), host.stop()]);
	}
	return results;
}

if (require.main === module) {
	nodesBench().then(
		(results) => process.stdout.write(`${JSON.stringify(results)}\n`),
		(error: Error) => {
			process.stderr.write(`${error.stack}\n`);
			process.exit(1);
		},
	);
}
