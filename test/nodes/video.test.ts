/**
 * The ImageGen node with p-video, run by n8n-core's engine against the real service in process (a
 * recording proxy in front, the sandbox rendering real H.264 MP4s with ffmpeg): the request the
 * parameters make, the MP4 streamed into n8n's binary store and read back with ffprobe, first
 * frames from a binary property or a URL, Submit and Get Generation, and the failures a user meets.
 * Videos that must still be running when the node looks (Submit, Max Wait, a cancel) are made by a
 * second service whose sandbox first waits a few seconds, as a slow host does; it is also the one
 * that refuses webhooks to loopback, as a service does by default.
 */
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { VIDEO_MODELS } from '../../core/video-models';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { probeVideo, type ProbedVideo } from '../helpers/ffprobe';
import { call, download, eventually } from '../server/support/http';
import { makeImage } from '../server/support/media';
import { startReceiver, type Receiver } from '../server/support/webhook-receiver';
import { binaryBytes, binaryStorePath, IMAGE_GEN, runWorkflow, type RunOptions, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment(['--webhook-allow-private']);
// Slow enough that a video is still running when the node polls it, and (as deployed by default)
// refusing webhooks to loopback or private addresses with a 400.
const SANDBOX_DELAY_MS = 3000;
const slow = useNodeTestEnvironment(['--sandbox-delay-ms', String(SANDBOX_DELAY_MS)]);

// Short drafts at 720p: every video a test makes is rendered for real, so each is kept small.
const VIDEO = { model: 'p-video', prompt: 'A lighthouse at dusk, waves rolling in', duration: 1, resolution: '720p', fps: 24, aspectRatio: '16:9', draft: true };
const VIDEOS = '/v1/videos';

function run(nodes: WorkflowNode[], seed?: SeedItem[], extra: Partial<RunOptions> = {}) {
	return runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed, ...extra });
}

/** A run against the slow service. */
function runSlowly(nodes: WorkflowNode[]) {
	return runWorkflow({ credentials: { apiKey: slow.server.apiKey, baseUrl: slow.proxy.baseUrl }, nodes });
}

function video(parameters: Record<string, unknown> = {}, options: Record<string, unknown> = {}, extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { ...VIDEO, ...parameters, options }, ...extra };
}

function getGeneration(generationId: string, options: Record<string, unknown> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { operation: 'getGeneration', generationId, options } };
}

const creates = () => env.proxy.requests.filter((request) => request.method === 'POST' && request.path === VIDEOS);
const polls = () => env.proxy.requests.filter((request) => request.method === 'GET' && /^\/v1\/videos\/[^/]+$/.test(request.path));
const contents = () => env.proxy.requests.filter((request) => request.method === 'GET' && /^\/v1\/videos\/[^/]+\/content$/.test(request.path));
const createdBody = (index = 0) => JSON.parse(creates()[index]!.json!) as Record<string, unknown>;

/** A video as the service keeps it now, asked directly (not through the proxy). */
async function videoOnService(id: string, service = env.server): Promise<Record<string, any>> {
	const answer = await call(service, `${VIDEOS}/${id}`);
	expect(answer.status).toBe(200);
	return answer.body;
}

/** What ffprobe reads in an MP4 held in memory by the test. */
async function probe(bytes: Buffer): Promise<ProbedVideo> {
	const path = join(tmpdir(), `imagegen-node-video-${process.pid}-${Date.now()}.mp4`);
	writeFileSync(path, bytes);
	try {
		return await probeVideo(path);
	} finally {
		rmSync(path, { force: true });
	}
}

let landscape: Buffer;
let portrait: Buffer;
beforeAll(async () => {
	landscape = await makeImage('png', 320, 180);
	portrait = await makeImage('png', 180, 320);
});

describe('Wait for Result "wait" (the default for p-video)', () => {
	test('the parameters become the request; the item has the MP4 as binary data and json describing it', async () => {
		const result = await run([video({ promptUpsampling: false, saveAudio: false }, { seed: 42 })]);
		expect(result.error()).toBeUndefined();

		expect(creates()).toHaveLength(1);
		expect(creates()[0]!.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
		expect(createdBody()).toEqual({
			model: 'p-video',
			prompt: VIDEO.prompt,
			seconds: 1,
			aspect_ratio: '16:9',
			resolution: '720p',
			fps: 24,
			draft: true,
			prompt_upsampling: false,
			save_audio: false,
			seed: 42,
		});
		const [item] = result.output('ImageGen');
		const id = String(item!.json.id);
		expect(id).toMatch(/^video_/);
		expect(polls().every((poll) => poll.path === `${VIDEOS}/${id}`)).toBe(true);
		expect(contents().map((request) => request.path)).toEqual([`${VIDEOS}/${id}/content`]);

		const kept = await videoOnService(id);
		expect(kept.status).toBe('completed');
		expect(item!.json).toMatchObject({ id, model: 'p-video', status: 'completed', prompt: VIDEO.prompt, seconds: '1', size: '1280x720', url: kept.url, usage: kept.usage, mimeType: 'video/mp4' });
		expect(kept.usage).toEqual({ seconds: 1, cost_usd: VIDEO_MODELS['p-video'].prices.draftPerSecondUsd['720p'] });
		expect(Date.parse(String(item!.json.expiresAt))).toBeGreaterThan(Date.now());
		expect(item!.pairedItem).toEqual({ item: 0 });

		const binary = item!.binary!.data!;
		expect(binary).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4', fileName: expect.stringMatching(/^p-video-.*\.mp4$/) });
		expect(binary.id).toMatch(/^filesystem/);
		const bytes = await binaryBytes(item!);
		expect(item!.json.sizeBytes).toBe(bytes.length);
		const hosted = await fetch(String(kept.url));
		expect(Buffer.from(await hosted.arrayBuffer()).equals(bytes)).toBe(true);
		expect(await probe(bytes)).toMatchObject({ codec: 'h264', width: 1280, height: 720, fps: 24 });
		expect((await probe(bytes)).durationSeconds).toBeCloseTo(1, 1);
	});

	test('the MP4 is streamed into n8n\'s store: half of it is on disk while the rest is still on its way', async () => {
		const stall = env.proxy.stallAnswerHalfway(/\/content$/);
		const running = run([video({ prompt: 'Streaming, a river at night' })]);
		const length = await stall.halfway;
		const partial = () => filesUnder(binaryStorePath()).filter((file) => file.path.includes('.tmp.'));
		// n8n writes the stream to a temporary file and renames it when the stream ends.
		expect(await eventually(() => partial().some((file) => file.size >= Math.floor(length / 2)), 10_000, 20)).toBe(true);
		expect(partial().every((file) => file.size < length)).toBe(true);
		stall.release();
		const result = await running;
		expect(result.error()).toBeUndefined();
		const bytes = await binaryBytes(result.output('ImageGen')[0]!);
		expect(bytes.length).toBe(length);
		expect((await probe(bytes)).codec).toBe('h264');
	});

	test('Put Output File in Field names the binary field; Download off keeps only the hosted URL', async () => {
		const named = await run([video({}, { binaryPropertyName: 'clip' })]);
		expect(Object.keys(named.output('ImageGen')[0]!.binary!)).toEqual(['clip']);
		env.proxy.reset();
		const urlOnly = await run([video({}, { download: false })]);
		const [item] = urlOnly.output('ImageGen');
		expect(item!.binary).toBeUndefined();
		expect(item!.json.url).toEqual(expect.stringMatching(/^http/));
		expect(contents()).toHaveLength(0);
	});

	test('1080p at 48 fps, 9:16: the size and rate the parameters ask for', async () => {
		const result = await run([video({ resolution: '1080p', fps: 48, aspectRatio: '9:16' })]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json.size).toBe('1080x1920');
		expect(await probe(await binaryBytes(item!))).toMatchObject({ width: 1080, height: 1920, fps: 48 });
	});
});

describe('first and last frames', () => {
	test('a first frame from a binary property is sent inline as a data URI; the video takes its shape, not the Aspect Ratio', async () => {
		const result = await run(
			[video({ aspectRatio: '1:1', firstFrame: 'binary', firstFrameBinaryPropertyName: 'photo' })],
			[{ json: {}, binary: { photo: { bytes: portrait, fileName: 'portrait.png', mimeType: 'image/png' } } }],
		);
		expect(result.error()).toBeUndefined();
		expect(createdBody().image).toBe(`data:image/png;base64,${portrait.toString('base64')}`);
		const [item] = result.output('ImageGen');
		expect(item!.json.size).toBe('720x1280');
		expect(await probe(await binaryBytes(item!))).toMatchObject({ width: 720, height: 1280 });
	});

	test('a binary frame above Send Binary Images Inline up to is uploaded (streamed) and passed by its hosted URL', async () => {
		const result = await run(
			[video({ firstFrame: 'binary', lastFrame: 'binary', lastFrameBinaryPropertyName: 'end' }, { inlineLimitMb: 0.001 })],
			[{ json: {}, binary: { data: { bytes: landscape, fileName: 'start.png', mimeType: 'image/png' }, end: { bytes: portrait, fileName: 'end.png', mimeType: 'image/png' } } }],
		);
		expect(result.error()).toBeUndefined();
		const uploads = env.proxy.requests.filter((request) => request.path === '/v1/uploads');
		expect(uploads).toHaveLength(2);
		expect(uploads.every((upload) => upload.contentType.startsWith('multipart/form-data'))).toBe(true);
		const body = createdBody();
		expect(body.image).toEqual(expect.stringMatching(new RegExp(`^${env.server.origin}/files/`)));
		expect(body.last_frame_image).toEqual(expect.stringMatching(new RegExp(`^${env.server.origin}/files/`)));
		expect(result.output('ImageGen')[0]!.json.size).toBe('1280x720');
	});

	test('first and last frame by URL pass as given; without an Audio URL no audio field is sent', async () => {
		const frame = env.media.put('/frame.png', landscape, { 'content-type': 'image/png' });
		const result = await run([video({ firstFrame: 'url', firstFrameUrl: frame, lastFrame: 'url', lastFrameUrl: frame })]);
		expect(result.error()).toBeUndefined();
		expect(createdBody()).toMatchObject({ image: frame, last_frame_image: frame });
		expect(createdBody()).not.toHaveProperty('audio');
	});

	test('an Audio URL is sent as audio: the video follows its length and carries it', async () => {
		const track = env.media.put('/voice.wav', wav(2), { 'content-type': 'audio/wav' });
		const result = await run([video({ duration: 1, audioUrl: track })]);
		expect(result.error()).toBeUndefined();
		expect(createdBody()).toMatchObject({ audio: track, save_audio: true });
		const [item] = result.output('ImageGen');
		expect(item!.json.seconds).toBe('2');
		const probed = await probe(await binaryBytes(item!));
		expect(probed.durationSeconds).toBeCloseTo(2, 1);
		expect(probed.audio?.durationSeconds).toBeCloseTo(2, 1);
	});

	test('a binary field that holds no image is refused naming First Frame; nothing is sent', async () => {
		const result = await run(
			[video({ firstFrame: 'binary' })],
			[{ json: {}, binary: { data: { bytes: Buffer.from('just some text, not a picture'), fileName: 'notes.txt', mimeType: 'text/plain' } } }],
		);
		expect(result.error()?.message).toMatch(/^Parameter 'firstFrame' of item 0: the binary field 'data' does not hold an image/);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

describe('Wait for Result "submit" and Get Generation', () => {
	test('submit outputs the Video object at once; Get Generation later outputs the MP4 as a waited run does', async () => {
		const submitted = await runSlowly([video({}, { waitForResult: 'submit' })]);
		expect(submitted.error()).toBeUndefined();
		const [item] = submitted.output('ImageGen');
		expect(item!.binary).toBeUndefined();
		expect(item!.json).toMatchObject({ object: 'video', model: 'p-video', status: expect.stringMatching(/^(queued|in_progress)$/), id: expect.stringMatching(/^video_/) });
		expect(slow.proxy.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`POST ${VIDEOS}`]);
		const id = String(item!.json.id);

		const running = await runSlowly([getGeneration(id)]);
		expect(running.output('ImageGen')[0]!.json).toMatchObject({ object: 'generation', id, status: expect.stringMatching(/^(queued|running)$/) });
		expect(running.output('ImageGen')[0]!.binary).toBeUndefined();

		expect(await eventually(async () => (await videoOnService(id, slow.server)).status === 'completed', 20_000)).toBe(true);
		slow.proxy.reset();
		const fetched = await runSlowly([getGeneration(id)]);
		expect(fetched.error()).toBeUndefined();
		const [done] = fetched.output('ImageGen');
		expect(done!.json).toMatchObject({ id, model: 'p-video', status: 'completed', seconds: '1', size: '1280x720', usage: { seconds: 1 } });
		expect(done!.binary!.data!.mimeType).toBe('video/mp4');
		expect(slow.proxy.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`GET /v1/generations/${id}`, `GET ${VIDEOS}/${id}`, `GET ${VIDEOS}/${id}/content`]);
		expect((await probe(await binaryBytes(done!))).codec).toBe('h264');
	});

	let receiver: Receiver;
	afterAll(async () => await receiver?.close());

	test('a Webhook URL is sent as webhook_url and receives the ended video', async () => {
		receiver = await startReceiver();
		const result = await run([video({}, { waitForResult: 'submit', webhookUrl: receiver.url })]);
		expect(result.error()).toBeUndefined();
		expect(createdBody().webhook_url).toBe(receiver.url);
		const id = String(result.output('ImageGen')[0]!.json.id);
		expect(await eventually(() => receiver.received.length > 0, 20_000)).toBe(true);
		const delivery = JSON.parse(receiver.received[0]!.body) as { type: string; data: { id: string; status: string } };
		expect(delivery).toMatchObject({ type: 'video.completed', data: { id, status: 'completed' } });
	});
});

describe('failures reach the user naming what to fix', () => {
	test.each([
		[{ duration: 11 }, /^Parameter 'duration' of item 0: 'seconds' must be a whole number from 1 to 10/],
		[{ prompt: '  ' }, /^Parameter 'prompt' of item 0: 'prompt' must not be empty/],
		[{ firstFrame: 'url', firstFrameUrl: 'ftp://example.com/a.png' }, /^Parameter 'firstFrame' of item 0: 'image' uses the unsupported URL scheme 'ftp:'/],
		[{ audioUrl: 'file:///etc/passwd' }, /^Parameter 'audioUrl' of item 0: 'audio' uses the unsupported URL scheme 'file:'/],
	])('%j is refused before anything is sent', async (parameters, message) => {
		const result = await run([video(parameters)]);
		expect(result.error()?.message).toMatch(message);
		expect(result.error()?.description).toMatch(/The request was not sent/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('a 400 naming a field reaches the user naming the node parameter behind it, with Continue On Fail as the item\'s error', async () => {
		const missing = `${env.media.origin}/no-such-frame.png`;
		const nodes = (extra: Partial<WorkflowNode> = {}) => [video({ firstFrame: 'url', firstFrameUrl: missing }, {}, extra)];
		const result = await run(nodes());
		const error = result.error()!;
		expect(error.message).toMatch(/^Fetching 'image' failed: 127\.0\.0\.1:\d+ answered HTTP 404$/);
		expect(error.httpCode).toBe('400');
		expect(error.description).toBe("Check the parameter 'firstFrame' (HTTP 400, code fetch_failed, field 'image').");
		expect(env.proxy.requests.map((request) => `${request.method} ${request.path} ${request.response?.status}`)).toEqual([`POST ${VIDEOS} 400`]);

		env.proxy.reset();
		const kept = await run(nodes({ onError: 'continueRegularOutput' }));
		expect(kept.error()).toBeUndefined();
		expect(kept.output('ImageGen')[0]!.json).toEqual({ error: error.message, description: error.description });
	});

	test('a Webhook URL the service refuses (loopback, by default) is a 400 naming Webhook URL', async () => {
		const result = await runSlowly([video({}, { waitForResult: 'submit', webhookUrl: 'http://127.0.0.1:9/hook' })]);
		const error = result.error()!;
		expect(error.message).toMatch(/webhook_url/);
		expect(error.description).toMatch(/^Check the parameter 'webhookUrl' \(HTTP 400, code \w+, field 'webhook_url'\)\.$/);
		expect(slow.proxy.requests.map((request) => `${request.method} ${request.path} ${request.response?.status}`)).toEqual([`POST ${VIDEOS} 400`]);
	});

	test('a video that fails ends the item with the service\'s message; Continue On Fail keeps it as the item\'s error', async () => {
		const noise = env.media.put('/noise.mp3', Buffer.from(Array.from({ length: 4096 }, (_, index) => (index * 7919) % 251)), { 'content-type': 'audio/mpeg' });
		const nodes = (extra: Partial<WorkflowNode> = {}) => [video({ audioUrl: noise }, {}, extra)];
		const result = await run(nodes());
		const error = result.error()!;
		// Accepted, then failed as it ran: the sandbox's ffmpeg cannot decode noise as MP3.
		expect(creates()[0]!.response!.status).toBe(200);
		expect(error.name).toBe('NodeOperationError');
		const id = /^Video (video_\w+) ended failed/.exec(String(error.description))?.[1];
		const kept = await videoOnService(String(id));
		expect(kept).toMatchObject({ status: 'failed', error: { message: expect.any(String), code: expect.any(String) } });
		expect(error.message).toBe(kept.error.message);
		expect(error.description).toBe(`Video ${id} ended failed (code ${kept.error.code}); nothing is charged for it.`);
		expect(kept.usage?.cost_usd ?? 0).toBe(0);

		env.proxy.reset();
		const continued = await run(nodes({ onError: 'continueRegularOutput' }));
		expect(continued.error()).toBeUndefined();
		const [item] = continued.output('ImageGen');
		expect(item!.json).toEqual({ error: error.message, description: expect.stringMatching(/^Video video_\w+ ended failed/) });
		expect(item!.binary).toBeUndefined();
	});

	test('Max Wait reached: the video is canceled and the item fails naming the option', async () => {
		const result = await runSlowly([video({}, { maxWaitSeconds: 1 })]);
		const error = result.error()!;
		expect(error.message).toMatch(/^Max Wait \(Seconds\) reached: video video_\S+ was still (queued|in_progress) after 1 s; it was canceled$/);
		const id = /video (video_\S+)/.exec(error.message)![1]!;
		expect(slow.proxy.requests.filter((request) => request.path === `${VIDEOS}/${id}/cancel`)).toHaveLength(1);
		expect((await videoOnService(id, slow.server)).status).toBe('failed');
	});

	test('a credential of an OpenAI-compatible service: p-video is refused before anything is sent', async () => {
		const result = await runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl, serviceType: 'openai' }, nodes: [video()] });
		expect(result.error()?.message).toMatch(/p-video needs an ImageGen service/);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

test('as an AI Agent\'s tool: the video is waited for and answered as JSON with its hosted URL, nothing downloaded', async () => {
	const tool = `${IMAGE_GEN}Tool`;
	const result = await run([{ ...video(), type: tool }], undefined, { nodeTypes: { [tool]: new ImageGen() } });
	expect(result.error()).toBeUndefined();
	const [item] = result.output('ImageGen');
	expect(item!.binary).toBeUndefined();
	expect(item!.json).toEqual({ id: expect.stringMatching(/^video_/), model: 'p-video', status: 'completed', prompt: VIDEO.prompt, seconds: '1', size: '1280x720', url: expect.any(String), expiresAt: expect.any(String), usage: { seconds: 1, cost_usd: expect.any(Number) } });
	expect(contents()).toHaveLength(0);
	const hosted = await download(String(item!.json.url));
	expect(hosted.headers.get('content-type')).toBe('video/mp4');
	expect(hosted.bytes.length).toBeGreaterThan(0);
});

test('image workflows are unchanged: a p-image run sends no video field and outputs its image', async () => {
	const result = await run([{ name: 'ImageGen', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A red bicycle', aspectRatio: '16:9', outputFormat: 'png', responseFormat: 'url', duration: 7, firstFrame: 'url' } }]);
	expect(result.error()).toBeUndefined();
	const generation = env.proxy.requests.find((request) => request.path === '/v1/images/generations')!;
	expect(JSON.parse(generation.json!)).toEqual({ model: 'p-image', prompt: 'A red bicycle', aspect_ratio: '16:9', output_format: 'png', response_format: 'url' });
	expect(result.output('ImageGen')[0]!.binary!.data!.mimeType).toBe('image/png');
	expect(creates()).toHaveLength(0);
});

// The examples render what they save (5 s each, one from a generated still): real ffmpeg work on a shared machine.
const EXAMPLE_TIMEOUT_MS = 180_000;

describe('the video examples, their ImageGen nodes as saved', () => {
	type Saved = { nodes: Array<{ name: string; type: string; typeVersion: number; parameters: Record<string, unknown> }> };
	const example = (file: string) => JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', file), 'utf8')) as Saved;
	const saved = (workflow: Saved, name: string): WorkflowNode => {
		const node = workflow.nodes.find((candidate) => candidate.name === name)!;
		expect([node.type, node.typeVersion]).toEqual([IMAGE_GEN, 1]);
		return { name, type: node.type, parameters: structuredClone(node.parameters) };
	};

	test('imagegen-video-from-prompt.json: a 5-second 16:9 MP4', async () => {
		const result = await run([saved(example('imagegen-video-from-prompt.json'), 'Make the video')]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Make the video');
		expect(item!.json).toMatchObject({ model: 'p-video', status: 'completed', seconds: '5', size: '1280x720' });
		const probed = await probe(await binaryBytes(item!));
		expect(probed).toMatchObject({ codec: 'h264', width: 1280, height: 720, fps: 24 });
		expect(probed.durationSeconds).toBeCloseTo(5, 1);
	}, EXAMPLE_TIMEOUT_MS);

	test('imagegen-video-first-frame.json: p-image makes a 9:16 still, p-video animates it from the binary and keeps its shape', async () => {
		const workflow = example('imagegen-video-first-frame.json');
		const result = await run([saved(workflow, 'Make the first frame'), saved(workflow, 'Animate it')]);
		expect(result.error()).toBeUndefined();
		// The proxy keeps the first 64 KB of a JSON body, and the still is larger: its start says what was sent.
		expect(creates()[0]!.json).toMatch(/"image":"data:image\/png;base64,/);
		const [item] = result.output('Animate it');
		expect(item!.json).toMatchObject({ model: 'p-video', status: 'completed', size: '720x1280' });
		expect(Object.keys(item!.binary!)).toEqual(['video']);
		expect(await probe(await binaryBytes(item!, 'video'))).toMatchObject({ codec: 'h264', width: 720, height: 1280 });
	}, EXAMPLE_TIMEOUT_MS);
});

/** A WAV of `seconds` of a quiet 440 Hz tone, 16-bit mono at 8 kHz, as any recorder writes it. */
function wav(seconds: number): Buffer {
	const rate = 8000;
	const samples = Buffer.alloc(rate * seconds * 2);
	for (let i = 0; i < rate * seconds; i++) samples.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
	const header = Buffer.alloc(44);
	header.write('RIFF', 0, 'latin1');
	header.writeUInt32LE(36 + samples.length, 4);
	header.write('WAVEfmt ', 8, 'latin1');
	header.writeUInt32LE(16, 16);
	header.writeUInt16LE(1, 20);
	header.writeUInt16LE(1, 22);
	header.writeUInt32LE(rate, 24);
	header.writeUInt32LE(rate * 2, 28);
	header.writeUInt16LE(2, 32);
	header.writeUInt16LE(16, 34);
	header.write('data', 36, 'latin1');
	header.writeUInt32LE(samples.length, 40);
	return Buffer.concat([header, samples]);
}

function filesUnder(dir: string): Array<{ path: string; size: number }> {
	return readdirSync(dir, { recursive: true })
		.map((name) => join(dir, String(name)))
		.flatMap((path) => {
			try {
				const stat = statSync(path);
				return stat.isFile() ? [{ path, size: stat.size }] : [];
			} catch {
				// Renamed or removed between the listing and the look: not a partial file any more.
				return [];
			}
		});
}
