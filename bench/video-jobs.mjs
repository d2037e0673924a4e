// What a video job costs on top of its host: a p-video job through imagegen-server (POST /v1/videos,
// then GET /v1/videos/{id} every 10 ms until completed) against the same stand-in of Pruna's P-API
// driven directly as the pruna provider drives it (create, the first status poll after 1 s, the
// provider's pace, then the MP4 streamed to disk). The difference is the service's own work:
// the download, the MP4 check, C2PA signing, the still, hosting and the durable writes of the job.
// One job at a time, a real 5 s 720p clip, the three sides in turn in each round (direct, service
// with --provenance off, service marking), the first side rotating between rounds.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile, round } from './lib.mjs';
import { smallClip } from './support/video-clips.mjs';
import { c2paSigned, completedVideo, createVideo, PRUNA_KEY, startPrunaVideoHost, startVideoService, VIDEO } from './support/video-service.mjs';

/** The pruna provider's pause before each status poll (provider-http.ts, pollIntervalMs). */
const PROVIDER_POLL_MS = 1000;
const CLIENT_POLL_MS = 10;
/** What the pruna provider sends for VIDEO (video-inputs.ts, pVideoFields). */
const DIRECT_INPUT = { prompt: VIDEO.prompt, duration: VIDEO.seconds, resolution: '720p', fps: 24, aspect_ratio: '16:9', draft: false, seed: 42, prompt_upsampling: false, save_audio: true };

async function hostJson(url, init = {}) {
	const response = await fetch(url, { ...init, headers: { apikey: PRUNA_KEY, ...init.headers } });
	const body = await response.json();
	if (!response.ok) throw new Error(`${url} answered ${response.status}: ${JSON.stringify(body)}`);
	return body;
}

/** The host driven directly: create, poll at the provider's pace, the MP4 streamed to `target`; answers the ms. */
async function directJob(host, target) {
	const started = performance.now();
	const created = await hostJson(`${host.origin}/v1/predictions`, { method: 'POST', headers: { model: 'p-video', 'content-type': 'application/json' }, body: JSON.stringify({ input: DIRECT_INPUT }) });
	let status = {};
	while (status.status !== 'succeeded') {
		await sleep(PROVIDER_POLL_MS);
		status = await hostJson(created.get_url);
		if (status.status === 'failed' || status.status === 'canceled') throw new Error(`the stand-in's prediction ended ${status.status}`);
	}
	const delivery = await fetch(status.generation_url, { headers: { apikey: PRUNA_KEY, accept: 'video/mp4' } });
	if (!delivery.ok) throw new Error(`the delivery answered ${delivery.status}`);
	await pipeline(Readable.fromWeb(delivery.body), createWriteStream(target));
	return performance.now() - started;
}

/** A video through the service, from the create to the poll that sees it completed; answers the ms and its id. */
async function serviceJob(service) {
	const started = performance.now();
	const id = await createVideo(service.origin);
	await completedVideo(service.origin, id, CLIENT_POLL_MS);
	return { ms: performance.now() - started, id };
}

const summary = (times) => {
	const sorted = [...times].sort((a, b) => a - b);
	return { p50Ms: round(percentile(sorted, 50), 1), p99Ms: round(percentile(sorted, 99), 1) };
};

export async function videoJobsBench({ jobs = 20, warmup = 2 } = {}) {
	const dirs = ['direct', 'unmarked', 'marked'].map((side) => mkdtempSync(join(tmpdir(), `imagegen-bench-video-${side}-`)));
	const clip = await smallClip();
	const host = await startPrunaVideoHost(clip);
	const unmarked = await startVideoService(dirs[1], host, ['--provenance', 'off']);
	const marked = await startVideoService(dirs[2], host);
	const sides = [
		['direct', () => directJob(host, join(dirs[0], 'delivered.mp4'))],
		['off', async () => (await serviceJob(unmarked)).ms],
		['on', async () => (await serviceJob(marked)).ms],
	];
	const times = { direct: [], off: [], on: [] };
	try {
		for (let i = 0; i < warmup + jobs; i++) {
			for (let s = 0; s < sides.length; s++) {
				const [name, run] = sides[(i + s) % sides.length];
				const ms = await run();
				if (i >= warmup) times[name].push(ms);
			}
		}
		// Each service's last video, read back: marking on signs it, off does not.
		const signed = { off: await c2paSigned(unmarked.origin, (await serviceJob(unmarked)).id), on: await c2paSigned(marked.origin, (await serviceJob(marked)).id) };
		const direct = summary(times.direct);
		const off = summary(times.off);
		const on = summary(times.on);
		const added = (side) => ({ p50Ms: round(side.p50Ms - direct.p50Ms, 1), p99Ms: round(side.p99Ms - direct.p99Ms, 1) });
		return { jobs, clipMb: round(statSync(clip).size / 1e6, 2), direct, off, on, addedOff: added(off), addedOn: added(on), signed };
	} finally {
		await Promise.all([unmarked.stop(), marked.stop(), host.stop()]);
		for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
	}
}
