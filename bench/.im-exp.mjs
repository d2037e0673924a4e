// Memory bounded by how inline answers flow: 1,200 generations, one at a time, each with its own
// `Idempotency-Key` and answered inline (`b64_json`, ≈ 4 MB of base64 each, from the loopback
// stand-in's 480 px noise picture fitted to 1024 px), in one service. Its resident memory is read
// after 150, 300, 600 and 1,200: the answers kept for replay (and the images they are sent from)
// must not add up in the process, so it stops growing once the traffic's working set is reached.
// Runs under this Node, or the one given with `--node <path>`, started as users start it: the bin,
// with the start settings it gives the process; `--plain-node` starts `node cli.js` without them.
//
//   node bench/inline-memory.mjs [--node <path>] [--generations 1200] [--samples 50,100,200]
//                                [--heap] [--plain-node] [--server-args '--marking-threads 0']
// A shorter probe: `--generations 300 --samples 50,100,200`. `--heap` starts the service with an
// admin key and reads V8's heap figures from its /metrics at every sample too.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCountingUpstream } from './idempotency.mjs';
import { noisyPicture } from './idempotency-memory.mjs';
import { API_KEY, peakRssMb, residentBytes, round, startImagegenServer } from './lib.mjs';

const MB = 1024 * 1024;
export const INLINE_MEMORY_SAMPLES = [150, 300, 600, 1200];

async function generate(origin, index) {
	const response = await fetch(`${origin}/v1/images/generations`, {
		method: 'POST',
		headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': `inline-memory-${index}` },
		body: JSON.stringify({ model: 'p-image', prompt: `a harbour at dawn, take ${index}`, seed: index, response_format: 'b64_json' }),
	});
	const body = await response.text();
	if (response.status !== 200) throw new Error(`generation ${index} answered ${response.status}: ${body.slice(0, 300)}`);
	if (response.headers.get('idempotent-replayed') === 'true') throw new Error(`generation ${index} was a replay on its first call`);
	return body.length;
}

/** Resident memory (MB) after each count of `samples`, the peak, and the answers' size; one fresh service under `node`. */
export async function inlineMemoryBench({ node = process.execPath, samples = INLINE_MEMORY_SAMPLES, heap = false, plainNode = false, serverArgs = [] } = {}) {
	const upstream = await startCountingUpstream(0, process.env.SIDE ? await (await import('sharp')).default((await import('node:crypto')).randomBytes(Number(process.env.SIDE) ** 2 * 3), { raw: { width: Number(process.env.SIDE), height: Number(process.env.SIDE), channels: 3 } }).png({ compressionLevel: 1 }).toBuffer() : await noisyPicture());
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-inline-memory-'));
	const adminArgs = heap ? ['--admin-key', ADMIN_KEY] : [];
	const server = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream', ...adminArgs, ...serverArgs], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' }, node, { plainNode });
	try {
		const startMb = round(residentBytes(server.pid) / MB, 1);
		const rssMb = {};
		const heapMb = {};
		let answerBytes = 0;
		const last = samples.at(-1);
		for (let index = 1; index <= last; index++) {
			answerBytes += await generate(server.origin, index);
			if (!samples.includes(index)) continue;
			rssMb[index] = `${round(residentBytes(server.pid) / MB, 1)}/${round(peakRssMb(server.pid), 1)}`;
			if (heap) heapMb[index] = await heapFigures(server.origin);
		}
		const from = samples[1] ?? samples[0];
		return {
			node: execFileSync(node, ['--version'], { encoding: 'utf8' }).trim(),
			launcher: plainNode ? 'plain node' : 'bin',
			generations: last,
			startMb,
			rssMb,
			peakMb: round(peakRssMb(server.pid), 1),
			
			growthFrom: from,
			...(heap ? { heapMb } : {}),
			answerMb: round(answerBytes / MB, 1),
			upstreamCalls: upstream.counter.calls,
		};
	} finally {
		await server.stop();
		await upstream.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}

const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';

/** V8's heap as the service's /metrics reports it (prom-client's default metrics), MB: total, of it new space, and external. */
async function heapFigures(origin) {
	const response = await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
	const text = await response.text();
	const value = (pattern) => round(Number(pattern.exec(text)?.[1] ?? NaN) / MB, 1);
	return {
		total: value(/^nodejs_heap_size_total_bytes (\S+)/m),
		newSpace: value(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m),
		external: value(/^nodejs_external_memory_bytes (\S+)/m),
	};
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const option = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
	const generations = Number(option('--generations') ?? INLINE_MEMORY_SAMPLES.at(-1));
	const given = option('--samples')?.split(',').map(Number) ?? INLINE_MEMORY_SAMPLES;
	const samples = given.filter((count) => count < generations).concat(generations);
	const serverArgs = option('--server-args')?.split(' ').filter(Boolean) ?? [];
	const heap = process.argv.includes('--heap');
	const plainNode = process.argv.includes('--plain-node');
	process.stdout.write(`${JSON.stringify(await inlineMemoryBench({ node: option('--node'), samples, heap, plainNode, serverArgs }))}\n`);
}
