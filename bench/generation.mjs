// Generation overhead: POST /v1/images/generations through the `upstream` provider against a host
// that answers instantly, vs a bare Fastify route forwarding to the same host. The throughput
// ratio is what our validation, dispatch, output check and storage cost. Measured for hosted
// answers (`url`: the image is written to disk) and inline ones (`b64_json`: nothing is written).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, round, startImagegenServer, startProcess } from './lib.mjs';


export async function generationBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-generation-'));
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const bare = await startProcess(join(ROOT, 'bench', 'bare-forwarder.mjs'), [upstream.origin]);
	const ours = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
	const bareUrl = `${bare.origin}/v1/images/generations`;
	const oursUrl = `${ours.origin}/v1/images/generations`;
	try {
		// Warm both (JIT, connection pools) before measuring.
		await generationLoad(bareUrl, { responseFormat: 'url', connections, seconds: 2 });
		await generationLoad(oursUrl, { responseFormat: 'url', connections, seconds: 3 });
		const results = {};
		for (const responseFormat of ['url', 'b64_json']) {
			// The shared machine's speed drifts: bare and ours run back to back in each round, and
			// the round with the median ratio is the figure.
			const measured = [];
			for (let i = 0; i < rounds; i++) {
				const b = await generationLoad(bareUrl, { responseFormat, connections, seconds });
				const o = await generationLoad(oursUrl, { responseFormat, connections, seconds });
				measured.push({ bare: b, ours: o, ratio: round(o.rps / b.rps) });
			}
			const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
			results[responseFormat] = { ...median, rounds: measured, errors: measured.reduce((sum, r) => sum + r.ours.errors + r.bare.errors, 0) };
		}
		return { connections, seconds, ...results };
	} finally {
		await Promise.all([ours.stop(), bare.stop(), upstream.stop()]);
		rmSync(dataDir, { recursive: true, force: true });
	}
}
