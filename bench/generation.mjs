// Generation overhead: POST /v1/images/generations through the `upstream` provider against a host
// that answers instantly, vs a bare Fastify route forwarding to the same host. The throughput
// ratio is what our validation, dispatch, output check and storage cost.
import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, round, startImagegenServer, startProcess } from './lib.mjs';

function load(url, { connections, amount }) {
	return autocannon({
		url,
		method: 'POST',
		connections,
		amount,
		headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse at dawn', aspect_ratio: '1:1', response_format: 'url' }),
	});
}

export async function generationBench({ connections = 16, amount = 4000 } = {}) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-generation-'));
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const bare = await startProcess(join(ROOT, 'bench', 'bare-forwarder.mjs'), [upstream.origin]);
	const ours = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
	try {
		// Warm both paths (JIT, connection pools) before measuring.
		await load(`${bare.origin}/v1/images/generations`, { connections, amount: 200 });
		await load(`${ours.origin}/v1/images/generations`, { connections, amount: 200 });
		const bareRun = await load(`${bare.origin}/v1/images/generations`, { connections, amount });
		const oursRun = await load(`${ours.origin}/v1/images/generations`, { connections, amount });
		const summary = (run) => ({ rps: round(run.requests.total / run.duration, 1), p50Ms: run.latency.p50, p99Ms: run.latency.p99, errors: run.errors + run.timeouts + run.non2xx });
		const b = summary(bareRun);
		const o = summary(oursRun);
		return { connections, amount, bare: b, ours: o, ratio: round(o.rps / b.rps) };
	} finally {
		await Promise.all([ours.stop(), bare.stop(), upstream.stop()]);
		rmSync(dataDir, { recursive: true, force: true });
	}
}
