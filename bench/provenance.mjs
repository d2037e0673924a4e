// Provenance cost: hosted generations (`url`) through the `upstream` provider with marking on
// (XMP + a signed C2PA manifest on every image) vs the same service with --provenance off, one
// request at a time so the p50 is a request's own latency. Target: marking adds ≤ 2 ms to the p50.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, round, startImagegenServer, startProcess } from './lib.mjs';

export async function provenanceBench({ seconds = 5, rounds = 3 } = {}) {
	const dirs = [mkdtempSync(join(tmpdir(), 'imagegen-bench-marked-')), mkdtempSync(join(tmpdir(), 'imagegen-bench-unmarked-'))];
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const env = { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' };
	const marked = await startImagegenServer(dirs[0], ['--providers', 'p-image=upstream'], env);
	const unmarked = await startImagegenServer(dirs[1], ['--providers', 'p-image=upstream', '--provenance', 'off'], env);
	const load = (server) => generationLoad(`${server.origin}/v1/images/generations`, { responseFormat: 'url', connections: 1, seconds });
	try {
		await load(unmarked);
		await load(marked);
		// Back to back in each round (the shared machine's speed drifts); the median round is the figure.
		const measured = [];
		for (let i = 0; i < rounds; i++) {
			const off = await load(unmarked);
			const on = await load(marked);
			measured.push({ off, on, addedP50Ms: round(on.p50Ms - off.p50Ms, 1) });
		}
		const median = [...measured].sort((x, y) => x.addedP50Ms - y.addedP50Ms)[Math.floor(rounds / 2)];
		return { ...median, rounds: measured, errors: measured.reduce((sum, r) => sum + r.on.errors + r.off.errors, 0) };
	} finally {
		await Promise.all([marked.stop(), unmarked.stop(), upstream.stop()]);
		for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
	}
}
