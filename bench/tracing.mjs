// What tracing costs a generation: inline generations (`b64_json`, `--provenance off`, so the
// host call and the spans around it are most of the work) through the `upstream` provider against a
// host that answers at once, on one service without OTEL_EXPORTER_OTLP_ENDPOINT and one with it
// pointing at a loopback stand-in of a collector (OTLP/HTTP, protobuf, the SDK's default; every
// request answered 200, never parsed). The two run back to back in each round; the round with the
// median p50 ratio is the figure, since the shared machine's speed drifts.
//
//   node bench/tracing.mjs [--seconds 5] [--rounds 3] [--connections 16]
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, round, startImagegenServer, startProcess } from './lib.mjs';

/** A collector's traces endpoint that takes every export; answers its origin, how many exports and bytes arrived, and a stop. */
async function loopbackCollector() {
	const seen = { exports: 0, bytes: 0 };
	const server = createServer((request, response) => {
		request.on('data', (chunk) => (seen.bytes += chunk.length));
		request.on('end', () => {
			if (request.url === '/v1/traces') seen.exports += 1;
			response.writeHead(200, { 'content-type': request.headers['content-type'] ?? 'application/x-protobuf' }).end();
		});
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return { origin: `http://127.0.0.1:${server.address().port}`, seen, stop: () => new Promise((resolve) => server.close(resolve)) };
}

export async function tracingBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dataDirs = [mkdtempSync(join(tmpdir(), 'imagegen-bench-untraced-')), mkdtempSync(join(tmpdir(), 'imagegen-bench-traced-'))];
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const collector = await loopbackCollector();
	const env = { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' };
	const args = ['--providers', 'p-image=upstream', '--provenance', 'off'];
	const untraced = await startImagegenServer(dataDirs[0], args, env);
	const traced = await startImagegenServer(dataDirs[1], args, { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin });
	const load = (server, time = seconds) => generationLoad(`${server.origin}/v1/images/generations`, { responseFormat: 'b64_json', connections, seconds: time, pid: server.pid });
	try {
		await load(untraced, 2);
		await load(traced, 2);
		const measured = [];
		for (let i = 0; i < rounds; i++) {
			const off = await load(untraced);
			const on = await load(traced);
			measured.push({ off, on, p50Ratio: round(on.p50Ms / off.p50Ms), rpsRatio: round(on.rps / off.rps) });
		}
		const median = [...measured].sort((x, y) => x.p50Ratio - y.p50Ratio)[Math.floor(rounds / 2)];
		const errors = measured.reduce((sum, r) => sum + r.off.errors + r.on.errors, 0);
		return { connections, seconds, ...median, rounds: measured, errors, collector: { ...collector.seen } };
	} finally {
		await Promise.all([untraced.stop(), traced.stop(), upstream.stop(), collector.stop()]);
		for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const option = (name, fallback) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
	const result = await tracingBench({ seconds: option('--seconds', 5), rounds: option('--rounds', 3), connections: option('--connections', 16) });
	process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
