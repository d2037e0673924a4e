// Marking large images must not hold up other callers: hosted generations of a 1.1 MB PNG run on
// 4 connections while one client asks GET /healthz in a loop. The probe's latency is set against
// the same service with --provenance off under the same generation load, once with a marking
// worker (--marking-threads 1) and once with every image marked on the event loop
// (--marking-threads 0). The C2PA engine hashes ≈ 7 ms per MB; on the event loop that time is
// every probe's wait.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, percentile, round, startImagegenServer, startProcess } from './lib.mjs';

/** Sequential GET /healthz until `until`; each request's latency in ms. */
async function probe(origin, until) {
	const latencies = [];
	while (Date.now() < until) {
		const started = performance.now();
		const response = await fetch(`${origin}/healthz`);
		await response.arrayBuffer();
		if (response.ok) latencies.push(performance.now() - started);
	}
	return latencies.sort((a, b) => a - b);
}

async function underLoad(server, seconds) {
	const [generations, latencies] = await Promise.all([
		generationLoad(`${server.origin}/v1/images/generations`, { responseFormat: 'url', connections: 4, seconds }),
		probe(server.origin, Date.now() + seconds * 1000),
	]);
	return { generations, probeP50Ms: round(percentile(latencies, 50), 1), probeP99Ms: round(percentile(latencies, 99), 1), probes: latencies.length };
}

const SERVICES = { worker: ['--marking-threads', '1'], eventLoop: ['--marking-threads', '0'], unmarked: ['--provenance', 'off'] };

export async function markingFairnessBench({ seconds = 5, rounds = 3 } = {}) {
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0', 'noise']);
	const env = { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' };
	const dirs = [];
	const servers = {};
	try {
		for (const [name, args] of Object.entries(SERVICES)) {
			dirs.push(mkdtempSync(join(tmpdir(), `imagegen-bench-fair-${name}-`)));
			servers[name] = await startImagegenServer(dirs.at(-1), ['--providers', 'p-image=upstream', ...args], env);
		}
		for (const server of Object.values(servers)) await underLoad(server, 2);
		// Back to back in each round (the shared machine's speed drifts); the median round is the figure.
		const measured = [];
		for (let i = 0; i < rounds; i++) {
			const each = {};
			for (const [name, server] of Object.entries(servers)) each[name] = await underLoad(server, seconds);
			each.workerP99Ratio = round(each.worker.probeP99Ms / each.unmarked.probeP99Ms);
			each.eventLoopP99Ratio = round(each.eventLoop.probeP99Ms / each.unmarked.probeP99Ms);
			measured.push(each);
		}
		const median = [...measured].sort((x, y) => x.workerP99Ratio - y.workerP99Ratio)[Math.floor(rounds / 2)];
		const errors = measured.reduce((sum, r) => sum + Object.keys(SERVICES).reduce((subtotal, name) => subtotal + r[name].generations.errors, 0), 0);
		return { ...median, rounds: measured, errors };
	} finally {
		await Promise.all([...Object.values(servers).map((server) => server.stop()), upstream.stop()]);
		for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
	}
}
