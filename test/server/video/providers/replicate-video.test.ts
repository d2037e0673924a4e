/**
 * The replicate video provider against a stand-in of Replicate's HTTP API for prunaai/p-video: the
 * create as Replicate publishes it (the model's route, a short `Prefer: wait`, p-video's input
 * schema, inputs as data URIs or, when large, through the files API), the prediction's id told
 * before any poll, a restart following it without creating another, cancel reaching Replicate,
 * the create sent once (again only after a 429), the host's refusals as our errors, the output URL
 * answered as a URL without the token, polling that stops (and cancels) on abort, a `Cancel-After`
 * deadline on every create, and an `aborted` prediction answered as one that made nothing.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { replicateVideoProvider } from '../../../../server/src/video/providers/replicate-video';
import type { VideoProvider } from '../../../../server/src/video/video-provider';
import { NothingMadeError } from '../../../../server/src/generation/providers/provider-http';
import { rejectedImageGenError } from '../../../helpers/image-gen-error';
import { FAST_HOSTS } from '../../support/providers';
import { REPLICATE_TOKEN, startReplicateVideoHost, type ReplicateVideoHost } from '../../support/replicate-video-host';
import { settledVideo, videoContext } from '../../support/video-context';
import { testMp4 } from '../../support/video-hosts';

jest.setTimeout(30_000);

let host: ReplicateVideoHost;
let provider: VideoProvider;
const CREATE = '/v1/models/prunaai/p-video/predictions';

beforeAll(async () => {
	host = await startReplicateVideoHost(await testMp4());
	provider = replicateVideoProvider('p-video', { apiToken: REPLICATE_TOKEN, baseUrl: `${host.origin}/v1`, modelVersions: {} }, FAST_HOSTS);
});
afterAll(async () => {
	await host.close();
});
beforeEach(() => {
	host.calls.length = 0;
	host.setPendingPolls(3);
	host.setOutcome('succeeded');
});

const context = (inputs = {}, deadline?: number) => videoContext(() => host.calls.length, inputs, deadline);
const until = async (done: () => boolean) => {
	while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
};

test("creates prunaai/p-video's prediction as Replicate publishes it, tells its id before polling, and answers the output's URL", async () => {
	const ctx = context();
	const video = await provider.generate(settledVideo({ seconds: 6, aspect_ratio: '1:1', fps: 24, draft: false }, 7), ctx);
	const id = host.predictionsMade()[0]!;
	expect(video).toEqual({ url: `${host.cdn.origin}/xezq/${id}/output.mp4` });

	const [create, ...polls] = host.calls;
	expect([create!.method, create!.path, create!.headers.prefer]).toEqual(['POST', CREATE, 'wait=5']);
	expect(create!.json).toEqual({
		input: { prompt: 'A paper boat on a rainy street', duration: 6, resolution: '720p', fps: 24, aspect_ratio: '1:1', draft: false, seed: 7, prompt_upsampling: true, save_audio: true },
	});
	expect(ctx.jobs).toEqual([{ provider: 'replicate', id }]);
	expect(ctx.named).toEqual([{ provider: 'replicate', id }]);
	expect(ctx.callsWhenTold).toEqual([1]);
	expect(polls.map((call) => `${call.method} ${call.path}`)).toEqual(Array.from({ length: 3 }, () => `GET /v1/predictions/${id}`));
	expect(host.calls.every((call) => call.headers.authorization === `Bearer ${REPLICATE_TOKEN}`)).toBe(true);
	// The output is fetched by the runner, keyless: the provider never called the delivery host.
	expect(host.cdn.calls).toEqual([]);
});

test('a prediction that ended within the create\'s wait is named to the trace, not kept to be followed', async () => {
	const url = `${host.cdn.origin}/xezq/done-at-once/output.mp4`;
	host.script('POST', CREATE, { status: 201, body: { id: 'done-at-once', status: 'succeeded', output: url } });
	const ctx = context();
	expect(await provider.generate(settledVideo(), ctx)).toEqual({ url });
	expect(ctx.named).toEqual([{ provider: 'replicate', id: 'done-at-once' }]);
	expect(ctx.jobs).toEqual([]);
});

test("every create carries Cancel-After: what is left of the video's time limit plus a margin, in seconds", async () => {
	await provider.generate(settledVideo(), context({}, Date.now() + 600_000));
	const cancelAfter = /^(\d+)s$/.exec(String(host.callsTo('POST', CREATE)[0]!.headers['cancel-after']))?.[1];
	// 600 s left, and a margin of 15 s.
	expect(Number(cancelAfter)).toBeGreaterThan(600);
	expect(Number(cancelAfter)).toBeLessThanOrEqual(615);
});

test('an aborted prediction (its deadline passed before it started) made nothing: a NothingMadeError, not an invalid answer', async () => {
	host.setOutcome('aborted');
	const ended = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect(ended).toBeInstanceOf(NothingMadeError);
	expect([ended.status, ended.code, ended.message]).toEqual([502, 'upstream_failed', 'The replicate provider failed: the prediction was aborted, its deadline passed before it started (nothing was made or charged)']);
	expect(host.statusOf(host.predictionsMade().at(-1)!)).toBe('aborted');
});

test('sends small inputs as data URIs of their type, and inputs over 1 MiB together through the files API', async () => {
	const png = await sharp({ create: { width: 16, height: 9, channels: 3, background: '#208040' } }).png().toBuffer();
	const mp3 = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.alloc(64)]);
	await provider.generate(settledVideo({ image: 'https://media.example/a.png', audio: 'https://media.example/a.mp3' }), context({ image: png, audio: mp3 }));
	const small = host.callsTo('POST', CREATE)[0]!.json.input;
	expect(small.image).toBe(`data:image/png;base64,${png.toString('base64')}`);
	expect(small.audio).toBe(`data:audio/mpeg;base64,${mp3.toString('base64')}`);
	expect(host.uploads()).toEqual([]);

	const large = await sharp(randomBytes(800 * 600 * 3), { raw: { width: 800, height: 600, channels: 3 } }).png().toBuffer();
	expect(large.length).toBeGreaterThan(1_048_576);
	await provider.generate(settledVideo({ image: 'https://media.example/b.png', last_frame_image: 'https://media.example/c.png' }), context({ image: large, last_frame_image: png }));
	const input = host.callsTo('POST', CREATE)[1]!.json.input;
	const uploaded = Object.fromEntries(host.uploads().map(({ filename, type, bytes, url }) => [filename, { type, size: bytes.length, url }]));
	expect(uploaded).toEqual({
		'image.png': { type: 'image/png', size: large.length, url: input.image },
		'last_frame_image.png': { type: 'image/png', size: png.length, url: input.last_frame_image },
	});
});

test('a restart follows the prediction by its id, polling at once, and creates nothing', async () => {
	const made = await fetch(`${host.origin}${CREATE}`, { method: 'POST', headers: { authorization: `Bearer ${REPLICATE_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: { prompt: 'earlier' } }) });
	const { id } = (await made.json()) as { id: string };
	host.calls.length = 0;
	const ctx = context();
	expect(await provider.resume!({ provider: 'replicate', id }, ctx)).toEqual({ url: `${host.cdn.origin}/xezq/${id}/output.mp4` });
	expect(host.callsTo('POST', CREATE)).toEqual([]);
	expect(host.calls[0]!.path).toBe(`/v1/predictions/${id}`);
	expect(ctx.jobs).toEqual([]);
});

test("cancel reaches Replicate's cancel route for the job's prediction", async () => {
	host.setPendingPolls(10_000);
	const ctx = context();
	const running = provider.generate(settledVideo(), ctx);
	await until(() => ctx.jobs.length === 1);
	await provider.cancel!(ctx.jobs[0]!);
	const cancels = host.callsTo('POST', `/v1/predictions/${ctx.jobs[0]!.id}/cancel`);
	expect(cancels).toHaveLength(1);
	expect(cancels[0]!.headers.authorization).toBe(`Bearer ${REPLICATE_TOKEN}`);
	expect(host.statusOf(ctx.jobs[0]!.id)).toBe('canceled');
	const ended = await rejectedImageGenError(running);
	expect([ended.status, ended.code, ended.message]).toEqual([502, 'upstream_failed', "The replicate provider failed: the prediction ended as 'canceled'"]);
});

test('an aborted job stops polling and cancels its prediction', async () => {
	host.setPendingPolls(10_000);
	const ctx = context();
	const running = provider.generate(settledVideo(), ctx);
	await until(() => host.callsTo('GET', '/v1/predictions/').length >= 2);
	ctx.controller.abort(new Error('canceled by its caller'));
	await expect(running).rejects.toThrow();
	const id = ctx.jobs[0]!.id;
	expect(host.callsTo('POST', `/v1/predictions/${id}/cancel`)).toHaveLength(1);
	const polls = host.callsTo('GET', '/v1/predictions/').length;
	await new Promise((resolve) => setTimeout(resolve, 150));
	expect(host.callsTo('GET', '/v1/predictions/')).toHaveLength(polls);
});

test('a prediction whose id could not be kept is canceled', async () => {
	const ctx = context();
	ctx.hostJobStarted = async () => {
		throw new Error('the job store is down');
	};
	await expect(provider.generate(settledVideo(), ctx)).rejects.toThrow('the job store is down');
	const id = host.predictionsMade().at(-1)!;
	expect(host.statusOf(id)).toBe('canceled');
});

test('the create is sent once after a 5xx or a time-out, and again only after a 429', async () => {
	host.script('POST', CREATE, { status: 502, body: { detail: 'Bad gateway' }, afterMaking: true });
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The replicate provider answered HTTP 502: Bad gateway']);
	expect(host.callsTo('POST', CREATE)).toHaveLength(1);

	host.calls.length = 0;
	// The host made the prediction but answers after the job's time limit.
	host.script('POST', CREATE, { status: 201, body: {}, delayMs: 2_000, afterMaking: true });
	await expect(provider.generate(settledVideo(), context({}, Date.now() + 300))).rejects.toThrow();
	expect(host.callsTo('POST', CREATE)).toHaveLength(1);

	host.calls.length = 0;
	host.script('POST', CREATE, { status: 429, body: { title: 'Request was throttled', detail: 'Request was throttled. Expected available in 1 second.', status: 429 }, headers: { 'retry-after': '0' } });
	await provider.generate(settledVideo(), context());
	expect(host.callsTo('POST', CREATE)).toHaveLength(2);
});

test("the host's refusals become our errors: its token refused, its input check, its rate limit, a failed prediction, an answer not as published", async () => {
	const wrongToken = replicateVideoProvider('p-video', { apiToken: 'r8_wrong', baseUrl: `${host.origin}/v1`, modelVersions: {} }, FAST_HOSTS);
	const auth = await rejectedImageGenError(wrongToken.generate(settledVideo(), context()));
	expect([auth.status, auth.code, auth.message]).toEqual([502, 'upstream_auth_failed', 'The replicate provider answered HTTP 401: You did not pass a valid authentication token']);

	const tooLong = await rejectedImageGenError(provider.generate({ ...settledVideo(), seconds: 30 }, context()));
	expect([tooLong.status, tooLong.code, tooLong.message]).toEqual([502, 'upstream_rejected', 'The replicate provider answered HTTP 422: - input.duration: Must be between 1 and 10']);

	host.script('POST', CREATE, { status: 429, body: { title: 'Request was throttled', detail: 'Request was throttled. Expected available in 40 seconds.', status: 429 }, headers: { 'retry-after': '40' } });
	const limited = await rejectedImageGenError(provider.generate(settledVideo(), context({}, Date.now() + 5_000)));
	expect([limited.status, limited.code, limited.retryAfterSeconds]).toEqual([429, 'upstream_rate_limited', 40]);

	host.setOutcome('failed');
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The replicate provider failed: CUDA out of memory']);
	host.setOutcome('succeeded');

	host.script('GET', '/v1/predictions/', { status: 200, body: { id: 'x', status: 'succeeded', output: ['not', 'a', 'url'] } });
	const odd = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([odd.status, odd.code]).toEqual([502, 'upstream_invalid_output']);
});

test('needs its token at start', () => {
	expect(() => replicateVideoProvider('p-video', { baseUrl: 'https://api.replicate.com/v1', modelVersions: {} }, {})).toThrow('providers: p-video=replicate needs REPLICATE_API_TOKEN');
});
