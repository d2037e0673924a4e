// Generation overhead: POST /v1/images/generations through the `upstream` provider against a host
// that answers instantly, vs a bare Fastify route forwarding to the same host. The throughput
// ratio is what our validation, dispatch, output check, storage and marking cost. Measured for
// hosted answers (`url`: the image is written to disk) and inline ones (`b64_json`: nothing is
// written), each with marking (the default: XMP and a signed C2PA manifest on every image) and
// without it (`--provenance off`: the storage path alone). Every service's CPU time per request
// is read from /proc, so what marking costs shows as time, not only as a ratio.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, round, startImagegenServer, startProcess } from './lib.mjs';

export async function generationBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dataDirs = [mkdtempSync(join(tmpdir(), 'imagegen-bench-generation-')), mkdtempSync(join(tmpdir(), 'imagegen-bench-generation-unmarked-'))];
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const env = { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' };
	const bare = await startProcess(join(ROOT, 'bench', 'bare-forwarder.mjs'), [upstream.origin]);
	const marked = await startImagegenServer(dataDirs[0], ['--providers', 'p-image=upstream'], env);
	const unmarked = await startImagegenServer(dataDirs[1], ['--providers', 'p-image=upstream', '--provenance', 'off'], env);
	const load = (server, responseFormat, time = seconds) =>
		generationLoad(`${server.origin}/v1/images/generations`, { responseFormat, connections, seconds: time, pid: server.pid });
	try {
		// Warm all three (JIT, connection pools) before measuring.
		await load(bare, 'url', 2);
		await load(unmarked, 'url', 3);
		await load(marked, 'url', 3);
		const results = {};
		for (const responseFormat of ['url', 'b64_json']) {
			// The shared machine's speed drifts: the three run back to back in each round, and the
			// round with the median ratio (marked) is the figure.
			const measured = [];
			for (let i = 0; i < rounds; i++) {
				const b = await load(bare, responseFormat);
				const off = await load(unmarked, responseFormat);
				const on = await load(marked, responseFormat);
				measured.push({ bare: b, unmarked: off, ours: on, unmarkedRatio: round(off.rps / b.rps), ratio: round(on.rps / b.rps) });
			}
			const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
			const unmarkedRatio = [...measured].map((r) => r.unmarkedRatio).sort((x, y) => x - y)[Math.floor(rounds / 2)];
			const errors = measured.reduce((sum, r) => sum + r.ours.errors + r.unmarked.errors + r.bare.errors, 0);
			results[responseFormat] = { ...median, unmarkedRatio, rounds: measured, errors };
		}
		return { connections, seconds, ...results };
	} finally {
		await Promise.all([marked.stop(), unmarked.stop(), bare.stop(), upstream.stop()]);
		for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
	}
}
