// A 500 MB video through the service, and what it costs the service's memory: the stand-in of
// Pruna's P-API delivers a 500 MB MP4 (a real 5 s 720p clip and a `free` box of padding), the
// service (`--max-video-mb 600`, marking on) downloads it to its work folder, checks it, hosts it
// unsigned (it is over the signing bound, MAX_SIGNED_VIDEO_BYTES) and makes its still; then the
// MP4 is read back whole, streamed, with a Range request. The service's resident memory (VmRSS,
// with its anonymous and file-backed parts) is read from /proc every 50 ms from the create to
// the last byte read; the figure is the peak minus the median of the idle second before. The
// baseline is the same for a small video (the clip alone, signed); a 100 MB video (unsigned as
// well) shows whether what is added grows with the bytes. Each video in a service of its own,
// started for it (the same arguments), the three in turn in each round: memory an earlier video
// left to the allocator would otherwise hide what this one takes. Twice: "warm", each measured
// video the service's second (after a small one of its own, as in a service that has run videos
// before), and "cold", its first (which also pays what a service sets up at its first video).
// Where the memory goes: the V8 heap and the memory outside it (Buffers and ArrayBuffers,
// `external`), from the service's /metrics every 250 ms over the same window (prom-client's
// nodejs_heap_size_total_bytes and nodejs_external_memory_bytes), peak minus the idle scrape.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile, round } from './lib.mjs';
import { largeClip, smallClip } from './support/video-clips.mjs';
import { auth, c2paSigned, completedVideo, createVideo, startPrunaVideoHost, startVideoService } from './support/video-service.mjs';

const SAMPLE_MS = 50;
const IDLE_MS = 1000;
/** After the start, before the idle second: what starting allocated settles first. */
const SETTLE_MS = 1000;
const SCRAPE_MS = 250;
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';

/** VmRSS and its anonymous and file-backed parts now, in MiB. */
function memoryOf(pid) {
	const status = readFileSync(`/proc/${pid}/status`, 'utf8');
	const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
	return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** Samples `pid`'s memory every SAMPLE_MS until `stop()`, which answers the samples, each tagged with the phase it fell in. */
function sampler(pid) {
	const samples = [];
	let phase = 'job';
	const take = () => samples.push({ phase, ...memoryOf(pid) });
	take();
	const timer = setInterval(take, SAMPLE_MS);
	return {
		phase: (next) => (phase = next),
		stop: () => (clearInterval(timer), take(), samples),
	};
}

/** The V8 heap's size and the memory outside it, in MiB, from the service's /metrics. */
async function heapOf(origin) {
	const text = await (await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text();
	const mib = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
	return { heap: mib('nodejs_heap_size_total_bytes'), external: mib('nodejs_external_memory_bytes') };
}

/** Scrapes the heap figures every SCRAPE_MS until `stop()`, which answers the peaks. */
function heapWatch(origin) {
	const peak = { heap: 0, external: 0 };
	let scraping = Promise.resolve();
	const scrape = () => (scraping = heapOf(origin).then((now) => ((peak.heap = Math.max(peak.heap, now.heap)), (peak.external = Math.max(peak.external, now.external)))));
	const timer = setInterval(() => void scrape(), SCRAPE_MS);
	return { stop: async () => (clearInterval(timer), await scraping, await scrape(), peak) };
}

/** GET /v1/videos/{id}/content with `Range: bytes=0-`, streamed and counted; answers the bytes and the file's size. */
async function readBack(origin, id) {
	const response = await fetch(`${origin}/v1/videos/${id}/content`, { headers: { ...auth, range: 'bytes=0-' } });
	if (response.status !== 206) throw new Error(`the content's Range read answered ${response.status}`);
	const size = Number(/\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1]);
	let bytes = 0;
	for await (const chunk of response.body) bytes += chunk.length;
	if (bytes !== size) throw new Error(`the content read back is ${bytes} bytes of ${size}`);
	return size;
}

/** One video through the service while its memory is sampled: the job, then the content read back. */
async function observedJob(service, host, clip) {
	await host.deliver(clip);
	const idle = [];
	for (let at = 0; at < IDLE_MS; at += SAMPLE_MS) idle.push(memoryOf(service.pid).rss), await sleep(SAMPLE_MS);
	const baselineMb = percentile(idle.sort((a, b) => a - b), 50);
	const idleHeap = await heapOf(service.origin);
	const heap = heapWatch(service.origin);
	const memory = sampler(service.pid);
	const started = performance.now();
	const id = await createVideo(service.origin);
	await completedVideo(service.origin, id, SAMPLE_MS);
	const jobMs = performance.now() - started;
	memory.phase('read');
	const hostedBytes = await readBack(service.origin, id);
	const readMs = performance.now() - started - jobMs;
	const samples = memory.stop();
	const peakHeap = await heap.stop();
	const peakOf = (phase) => samples.filter((sample) => !phase || sample.phase === phase).reduce((peak, sample) => (sample.rss > peak.rss ? sample : peak));
	const peak = peakOf();
	return {
		hostedMb: round(hostedBytes / 1e6, 1),
		signed: await c2paSigned(service.origin, id),
		jobMs: Math.round(jobMs),
		readMs: Math.round(readMs),
		samples: samples.length,
		baselineMb: round(baselineMb, 1),
		peakMb: round(peak.rss, 1),
		addedMb: round(peak.rss - baselineMb, 1),
		addedInJobMb: round(peakOf('job').rss - baselineMb, 1),
		addedInReadMb: round(peakOf('read').rss - baselineMb, 1),
		peakAnonMb: round(peak.anon, 1),
		peakFileMb: round(peak.file, 1),
		idleAnonMb: round(samples[0].anon, 1),
		idleFileMb: round(samples[0].file, 1),
		heapAddedMb: round(peakHeap.heap - idleHeap.heap, 1),
		externalAddedMb: round(peakHeap.external - idleHeap.external, 1),
	};
}

/** What `rounds` of each video added, in fresh services; `warm`: each after one small video of its own. */
async function measureAll(host, clips, rounds, warm) {
	const measure = async (clip) => {
		const dir = mkdtempSync(join(tmpdir(), 'imagegen-bench-video-memory-'));
		const service = await startVideoService(dir, host, ['--max-video-mb', '600', '--admin-key', ADMIN_KEY]);
		try {
			if (warm) {
				await host.deliver(clips.small);
				await completedVideo(service.origin, await createVideo(service.origin), SAMPLE_MS);
			}
			await sleep(SETTLE_MS);
			return await observedJob(service, host, clip);
		} finally {
			await service.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	};
	const measured = { small: [], mid: [], large: [] };
	for (let i = 0; i < rounds; i++) for (const size of Object.keys(measured)) measured[size].push(await measure(clips[size]));
	// The round that added the most is the figure: the target is a bound, not an average.
	const worst = (runs) => runs.reduce((most, run) => (run.addedMb > most.addedMb ? run : most));
	const [small, mid, large] = [worst(measured.small), worst(measured.mid), worst(measured.large)];
	return { rounds: measured, small, mid, large, overSmallMb: round(large.addedMb - small.addedMb, 1), overMidMb: round(large.addedMb - mid.addedMb, 1) };
}

export async function videoMemoryBench({ rounds = 2, largeBytes = 500 * 1000 * 1000, midBytes = 100 * 1000 * 1000 } = {}) {
	// The 100 MB one is unsigned too: against it, the 500 MB one shows whether memory grows with the bytes.
	const clips = { small: await smallClip(), mid: await largeClip(midBytes), large: await largeClip(largeBytes) };
	const host = await startPrunaVideoHost(clips.small);
	try {
		const warm = await measureAll(host, clips, rounds, true);
		const cold = await measureAll(host, clips, rounds, false);
		return { largeMb: round(largeBytes / 1e6), midMb: round(midBytes / 1e6), warm, cold };
	} finally {
		await host.stop();
	}
}
