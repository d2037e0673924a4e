// What the video benches share: the stand-in of Pruna's P-API in its own process, imagegen-server
// serving p-video from it (`--providers p-video=pruna`, its base URL and key from the environment
// as a user sets them), and a client of POST /v1/videos that polls the video to its end.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_KEY, ROOT, startImagegenServer, startProcess } from '../lib.mjs';

export const PRUNA_KEY = 'bench-pruna-video-key';
/** What both sides ask for: p-video's 5 s at 720p (the stand-in delivers the clip it was given). */
export const VIDEO = { model: 'p-video', prompt: 'A lighthouse at dawn, waves rolling in', seconds: 5, size: '1280x720' };
export const auth = { authorization: `Bearer ${API_KEY}` };

/** The stand-in, delivering `mp4` after `processingMs`; `deliver(path)` changes the file of later predictions. */
export async function startPrunaVideoHost(mp4, processingMs = 0) {
	const host = await startProcess(join(ROOT, 'bench', 'support', 'pruna-video-host.mjs'), [mp4, String(processingMs)], { PRUNA_KEY });
	const deliver = async (path) => {
		const response = await fetch(`${host.origin}/bench/delivery`, { method: 'POST', body: JSON.stringify({ mp4: path }) });
		if (!response.ok) throw new Error(`the stand-in refused the delivery: ${response.status}`);
	};
	return { ...host, deliver };
}

export function startVideoService(dataDir, host, args = []) {
	return startImagegenServer(dataDir, ['--providers', 'p-video=pruna', ...args], { PRUNA_API_KEY: PRUNA_KEY, PRUNA_BASE_URL: `${host.origin}/v1` });
}

/** POST /v1/videos; answers the video's id. */
export async function createVideo(origin) {
	const response = await fetch(`${origin}/v1/videos`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(VIDEO) });
	const body = await response.json();
	if (!response.ok) throw new Error(`POST /v1/videos answered ${response.status}: ${JSON.stringify(body)}`);
	return body.id;
}

/** Polls GET /v1/videos/{id} every `intervalMs` until it is completed; throws if it failed. */
export async function completedVideo(origin, id, intervalMs) {
	for (;;) {
		const response = await fetch(`${origin}/v1/videos/${id}`, { headers: auth });
		const video = await response.json();
		if (!response.ok) throw new Error(`GET /v1/videos/${id} answered ${response.status}: ${JSON.stringify(video)}`);
		if (video.status === 'completed') return video;
		if (video.status === 'failed') throw new Error(`video ${id} failed: ${JSON.stringify(video.error)}`);
		await sleep(intervalMs);
	}
}

/** The UUID of the top-level `uuid` box a C2PA manifest sits in, in an MP4 (the C2PA specification, BMFF embedding). */
const C2PA_BOX_UUID = 'd8fec3d61b0e483c92975828877ec481';

/** The top-level boxes of a hosted video, from their headers, read by Range requests to GET /v1/videos/{id}/content. */
export async function hostedBoxes(origin, id) {
	const url = `${origin}/v1/videos/${id}/content`;
	const boxes = [];
	for (let offset = 0, fileSize = Infinity; offset < fileSize && boxes.length < 64; ) {
		const response = await fetch(url, { headers: { ...auth, range: `bytes=${offset}-${offset + 31}` } });
		if (response.status !== 206) throw new Error(`a Range read of ${url} answered ${response.status}`);
		fileSize = Number(/\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1]);
		const head = Buffer.from(await response.arrayBuffer());
		const type = head.toString('latin1', 4, 8);
		const wide = head.readUInt32BE(0) === 1;
		const size = wide ? Number(head.readBigUInt64BE(8)) : head.readUInt32BE(0) || fileSize - offset;
		boxes.push({ type, size, ...(type === 'uuid' ? { uuid: head.toString('hex', wide ? 16 : 8, wide ? 32 : 24) } : {}) });
		offset += size;
	}
	return boxes;
}

/** Whether a hosted video carries a C2PA manifest (its top-level C2PA `uuid` box). */
export async function c2paSigned(origin, id) {
	return (await hostedBoxes(origin, id)).some((box) => box.type === 'uuid' && box.uuid === C2PA_BOX_UUID);
}
