// Memory of idempotent inline answers: 150 generations with an Idempotency-Key each, answered in
// `b64_json` (each answer about a MB of base64, from a model host answering with a photo-like
// picture), then replays of some of them. Answers kept for replay must stay out of memory: the
// service's resident memory after them is compared with the same service after the same number of
// generations without a key, each in a fresh process after the same warm-up, in the same run.
// Runs under this Node and under Node 24 (the one n8n runs on, from the n8n cache), whose allocator
// and garbage collector behave differently.
//
//   node bench/idempotency-memory.mjs [--this-node-only]
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { startCountingUpstream } from './idempotency.mjs';
import { API_KEY, residentBytes, round, startImagegenServer } from './lib.mjs';

const require = createRequire(import.meta.url);
const MB = 1024 * 1024;
const GENERATIONS = 150;
const REPLAY_EVERY = 10;
const WARM_UP = 60;
/** Resident memory moves by tens of MB from one picture to the next: the median of the last figures is the level. */
const SAMPLES = 30;

/** Noise does not compress: about 0.7 MB of PNG, 0.9 MB once in base64. */
export function noisyPicture() {
	const side = 480;
	return sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
}

function level(figures) {
	const last = figures.slice(-SAMPLES).sort((a, b) => a - b);
	return last[Math.floor(last.length / 2)];
}

async function generate(origin, index, idempotencyKey) {
	const response = await fetch(`${origin}/v1/images/generations`, {
		method: 'POST',
		headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
		body: JSON.stringify({ model: 'p-image', prompt: `a harbour at dawn, take ${index}`, seed: index, response_format: 'b64_json' }),
	});
	const body = await response.text();
	if (response.status !== 200) throw new Error(`generation ${index} answered ${response.status}: ${body.slice(0, 300)}`);
	return { replayed: response.headers.get('idempotent-replayed') === 'true', bytes: body.length };
}

/**
 * One fresh service under `node`: the warm-up, then GENERATIONS generations, with a key each (and
 * replays of every REPLAY_EVERY-th) when `idempotent`. Answers the resident levels in MB.
 */
async function oneService(node, upstream, idempotent) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-idempotency-memory-'));
	const server = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' }, node);
	try {
		// The same work first: what image encoding, the garbage collector and the allocator settle
		// at with this traffic is not growth with history.
		const warm = [];
		for (let index = 0; index < WARM_UP; index++) {
			await generate(server.origin, index);
			warm.push(residentBytes(server.pid));
		}
		const after = [];
		let answerBytes = 0;
		let replays = 0;
		const key = (index) => (idempotent ? `memory-${index}` : undefined);
		for (let index = 0; index < GENERATIONS; index++) {
			const first = await generate(server.origin, index, key(index));
			if (first.replayed) throw new Error(`generation ${index} was a replay on its first call`);
			answerBytes += first.bytes;
			after.push(residentBytes(server.pid));
		}
		for (let index = 0; idempotent && index < GENERATIONS; index += REPLAY_EVERY) {
			if (!(await generate(server.origin, index, key(index))).replayed) throw new Error(`generation ${index} was not replayed`);
			replays++;
			after.push(residentBytes(server.pid));
		}
		return { warmMb: round(level(warm) / MB, 1), afterMb: round(level(after) / MB, 1), growthMb: round((level(after) - level(warm)) / MB, 1), answerMb: round(answerBytes / MB, 1), replays };
	} finally {
		await server.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}

/** This Node, then Node 24 from the n8n cache (installed on first use) when this one is older. */
export async function thisNodeAndNode24() {
	if (Number(process.versions.node.split('.')[0]) >= 24) return [process.execPath];
	return [process.execPath, await require('../scripts/node-line.cjs').nodeOfLine('24')];
}

export async function idempotencyMemoryBench({ thisNodeOnly = false } = {}) {
	const upstream = await startCountingUpstream(0, await noisyPicture());
	const nodes = thisNodeOnly ? [process.execPath] : await thisNodeAndNode24();
	try {
		const results = [];
		for (const node of nodes) {
			const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
			const plain = await oneService(node, upstream, false);
			const idempotent = await oneService(node, upstream, true);
			results.push({ node: version, generations: GENERATIONS, plain, idempotent, ratio: round(idempotent.afterMb / plain.afterMb, 2), addedMb: round(idempotent.afterMb - plain.afterMb, 1) });
		}
		return results;
	} finally {
		await upstream.stop();
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	for (const result of await idempotencyMemoryBench({ thisNodeOnly: process.argv.includes('--this-node-only') })) process.stdout.write(`${JSON.stringify(result)}\n`);
}
