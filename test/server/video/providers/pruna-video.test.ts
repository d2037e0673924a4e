/**
 * The pruna video provider against a stand-in of Pruna's P-API: the create as Pruna publishes it
 * (headers, p-video's input fields, inputs uploaded first), the job id told before any poll, a
 * restart following the prediction by its id without creating another, the create sent once
 * (again only after a 429), the host's refusals as our errors, the MP4 streamed with the key from
 * Pruna's origin and answered as a URL, keyless, from another, and polling that stops on abort.
 */
import sharp from 'sharp';
import { ImageGenError } from '../../../../core/errors';
import { prunaVideoProvider } from '../../../../server/src/video/providers/pruna-video';
import type { VideoProvider } from '../../../../server/src/video/video-provider';
import { rejectedImageGenError } from '../../../helpers/image-gen-error';
import { PRUNA_KEY, startPrunaVideoHost, type PrunaVideoHost } from '../../support/pruna-video-host';
import { FAST_HOSTS } from '../../support/providers';
import { deliveredBytes, fileBytes, settledVideo, videoContext } from '../../support/video-context';
import { testMp4 } from '../../support/video-hosts';

jest.setTimeout(30_000);

let host: PrunaVideoHost;
let mp4: string;
let provider: VideoProvider;

beforeAll(async () => {
	mp4 = await testMp4();
	host = await startPrunaVideoHost(mp4);
	provider = prunaVideoProvider('p-video', { apiKey: PRUNA_KEY, baseUrl: `${host.origin}/v1` }, FAST_HOSTS);
});
afterAll(async () => {
	await host.close();
});
beforeEach(() => {
	host.calls.length = 0;
	host.cdn.calls.length = 0;
	host.setPendingPolls(3);
	host.setOutcome('succeeded');
	host.deliverElsewhere(false);
});

const context = (inputs = {}, deadline?: number) => videoContext(() => host.calls.length, inputs, deadline);

test('creates the prediction as Pruna publishes it, tells its id before polling, and streams the MP4 with the key', async () => {
	const ctx = context();
	const video = await provider.generate(settledVideo({ seconds: 4, resolution: '1080p', fps: 48, aspect_ratio: '9:16', draft: true, prompt_upsampling: false, save_audio: false }, 99), ctx);
	expect(await deliveredBytes(video)).toEqual(await fileBytes(mp4));

	const [create, ...rest] = host.calls;
	expect([create!.method, create!.path, create!.headers.model, create!.headers.apikey]).toEqual(['POST', '/v1/predictions', 'p-video', PRUNA_KEY]);
	expect(create!.headers['try-sync']).toBeUndefined();
	expect(create!.json).toEqual({
		input: { prompt: 'A paper boat on a rainy street', duration: 4, resolution: '1080p', fps: 48, aspect_ratio: '9:16', draft: true, seed: 99, prompt_upsampling: false, save_audio: false },
	});
	const id = host.predictionsMade()[0]!;
	expect(ctx.jobs).toEqual([{ provider: 'pruna', id }]);
	expect(ctx.named).toEqual([{ provider: 'pruna', id }]);
	// Told when only the create had reached the host.
	expect(ctx.callsWhenTold).toEqual([1]);
	expect(rest.map((call) => `${call.method} ${call.path}`)).toEqual([
		...Array.from({ length: 4 }, () => `GET /v1/predictions/status/${id}`),
		`GET /v1/predictions/delivery/xy/${id}/output.mp4`,
	]);
	expect(host.calls.every((call) => call.headers.apikey === PRUNA_KEY)).toBe(true);
});

test('uploads a first frame, a last frame and an audio track first, and passes them by the URLs Pruna answers', async () => {
	const png = await sharp({ create: { width: 32, height: 18, channels: 3, background: '#3366aa' } }).png().toBuffer();
	const jpeg = await sharp({ create: { width: 32, height: 18, channels: 3, background: '#aa6633' } }).jpeg().toBuffer();
	const wav = wavBytes();
	const ctx = context({ image: png, last_frame_image: jpeg, audio: wav });
	const request = settledVideo({ image: 'https://media.example/first.png', last_frame_image: 'https://media.example/last.jpg', audio: 'https://media.example/voice.wav' });
	await deliveredBytes(await provider.generate(request, ctx));

	const { input } = host.callsTo('POST', '/v1/predictions')[0]!.json;
	// Uploaded side by side, so in any order: each matched by its name.
	const uploads = Object.fromEntries(host.uploads().map(({ filename, ...upload }) => [filename, upload]));
	expect(uploads).toEqual({
		'image.png': { type: 'image/png', bytes: png, url: input.image },
		'last_frame_image.jpeg': { type: 'image/jpeg', bytes: jpeg, url: input.last_frame_image },
		'audio.wav': { type: 'audio/wav', bytes: wav, url: input.audio },
	});
	expect(new Set([input.image, input.last_frame_image, input.audio]).size).toBe(3);
});

test('a restart follows the prediction by its id, polling at once, and creates nothing', async () => {
	const first = context();
	first.hostJobStarted = async (job) => {
		first.jobs.push(job);
		first.controller.abort(new Error('the process stopped'));
	};
	await expect(provider.generate(settledVideo(), first)).rejects.toThrow();
	const [job] = first.jobs;
	host.calls.length = 0;

	const resumed = context();
	expect(await deliveredBytes(await provider.resume!(job!, resumed))).toEqual(await fileBytes(mp4));
	expect(host.callsTo('POST', '/v1/predictions')).toEqual([]);
	expect(host.calls[0]!.path).toBe(`/v1/predictions/status/${job!.id}`);
	expect(resumed.jobs).toEqual([]);
});

test('has no cancel: the P-API publishes none', () => {
	expect(provider.cancel).toBeUndefined();
	expect(provider.hasJobIds).toBe(true);
});

test('the create is sent once after a 5xx or a time-out, and again only after a 429', async () => {
	host.script('POST', '/v1/predictions', { status: 502, body: { error: { message: 'Bad gateway' } }, afterMaking: true });
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The pruna provider answered HTTP 502: Bad gateway']);
	expect(host.callsTo('POST', '/v1/predictions')).toHaveLength(1);

	host.calls.length = 0;
	host.script('POST', '/v1/predictions', { status: 200, hang: true });
	const ctx = context();
	setTimeout(() => ctx.controller.abort(new Error('time limit')), 300);
	await expect(provider.generate(settledVideo(), ctx)).rejects.toThrow('time limit');
	expect(host.callsTo('POST', '/v1/predictions')).toHaveLength(1);

	host.calls.length = 0;
	host.script('POST', '/v1/predictions', { status: 429, body: { error: { message: 'Rate limit exceeded' } }, headers: { 'retry-after': '0' } });
	await deliveredBytes(await provider.generate(settledVideo(), context()));
	expect(host.callsTo('POST', '/v1/predictions')).toHaveLength(2);
});

test("the host's refusals become our errors: its key refused, its input check, its rate limit, a failed prediction, an answer not as published", async () => {
	const wrongKey = prunaVideoProvider('p-video', { apiKey: 'not-the-key', baseUrl: `${host.origin}/v1` }, FAST_HOSTS);
	const auth = await rejectedImageGenError(wrongKey.generate(settledVideo(), context()));
	expect([auth.status, auth.code, auth.message]).toEqual([502, 'upstream_auth_failed', 'The pruna provider answered HTTP 401: Invalid or missing API key']);

	const tooLong = await rejectedImageGenError(provider.generate({ ...settledVideo(), seconds: 30 }, context()));
	expect([tooLong.status, tooLong.code, tooLong.message]).toEqual([502, 'upstream_rejected', 'The pruna provider answered HTTP 422: input.duration must be an integer from 1 to 20']);

	// Its Retry-After ends after the job's time limit: not waited for.
	host.script('POST', '/v1/predictions', { status: 429, body: { error: { message: 'Too many requests' } }, headers: { 'retry-after': '30' } });
	const limited = await rejectedImageGenError(provider.generate(settledVideo(), context({}, Date.now() + 5_000)), 'a rate-limited create');
	expect([limited.status, limited.code, limited.retryAfterSeconds]).toEqual([429, 'upstream_rate_limited', 30]);

	host.setOutcome('failed');
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The pruna provider failed: The prompt was flagged by the safety filter']);
	host.setOutcome('succeeded');

	host.script('GET', '/v1/predictions/status/', { status: 200, body: { status: 'done', url: 'x' } });
	const odd = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([odd.status, odd.code]).toEqual([502, 'upstream_invalid_output']);
	expect(odd).toBeInstanceOf(ImageGenError);
});

test('a delivery on another origin is answered as its URL, and the key never goes there', async () => {
	host.deliverElsewhere(true);
	const video = await provider.generate(settledVideo(), context());
	const id = host.predictionsMade().at(-1)!;
	expect(video).toEqual({ url: `${host.cdn.origin}/deliveries/${id}/output.mp4` });
	expect(host.cdn.calls).toEqual([]);
});

test('a status URL on another origin is refused rather than polled with the key', async () => {
	host.script('POST', '/v1/predictions', { status: 200, body: { id: 'pv-elsewhere', get_url: `${host.cdn.origin}/status/pv-elsewhere` } });
	const refused = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect(refused.code).toBe('upstream_invalid_output');
	expect(host.cdn.calls).toEqual([]);
});

test('a slow host is waited for: a status answer that takes its time is not asked again meanwhile', async () => {
	host.script('GET', '/v1/predictions/status/', { status: 200, body: { status: 'processing', message: 'Generating video' }, delayMs: 400 });
	const started = Date.now();
	expect(await deliveredBytes(await provider.generate(settledVideo(), context()))).toEqual(await fileBytes(mp4));
	expect(Date.now() - started).toBeGreaterThanOrEqual(400);
	const [slow, next] = host.callsTo('GET', '/v1/predictions/status/');
	expect(next!.at - slow!.at).toBeGreaterThanOrEqual(400);
});

test('polling stops when the job is aborted', async () => {
	host.setPendingPolls(10_000);
	const ctx = context();
	const running = provider.generate(settledVideo(), ctx);
	while (host.callsTo('GET', '/v1/predictions/status/').length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
	ctx.controller.abort(new Error('canceled'));
	await expect(running).rejects.toThrow();
	const polls = host.callsTo('GET', '/v1/predictions/status/').length;
	await new Promise((resolve) => setTimeout(resolve, 150));
	expect(host.callsTo('GET', '/v1/predictions/status/')).toHaveLength(polls);
});

test('needs its key at start', () => {
	expect(() => prunaVideoProvider('p-video', { baseUrl: 'https://api.pruna.ai/v1' }, {})).toThrow('providers: p-video=pruna needs PRUNA_API_KEY');
});

/** A short, valid WAV: a RIFF header and 100 ms of silence. */
function wavBytes(): Buffer {
	const samples = Buffer.alloc(4800 * 2);
	const header = Buffer.alloc(44);
	header.write('RIFF', 0, 'latin1');
	header.writeUInt32LE(36 + samples.length, 4);
	header.write('WAVEfmt ', 8, 'latin1');
	header.writeUInt32LE(16, 16);
	header.writeUInt16LE(1, 20);
	header.writeUInt16LE(1, 22);
	header.writeUInt32LE(48_000, 24);
	header.writeUInt32LE(96_000, 28);
	header.writeUInt16LE(2, 32);
	header.writeUInt16LE(16, 34);
	header.write('data', 36, 'latin1');
	header.writeUInt32LE(samples.length, 40);
	return Buffer.concat([header, samples]);
}
