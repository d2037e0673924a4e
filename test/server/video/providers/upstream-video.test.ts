/**
 * The upstream video provider against a stand-in of another server with this API's videos
 * routes: the create (JSON, p-video's fields, inputs inlined as data URIs), the video's id told
 * before any poll and its progress passed on, a restart following it without creating another,
 * cancel (tolerating a host without the route), the create sent once (again only after a 429),
 * the host's refusals as our errors, the MP4 streamed with the key, and polling that stops on abort.
 */
import sharp from 'sharp';
import { upstreamVideoProvider } from '../../../../server/src/video/providers/upstream-video';
import type { VideoProvider } from '../../../../server/src/video/video-provider';
import { rejectedImageGenError } from '../../../helpers/image-gen-error';
import { FAST_HOSTS } from '../../support/providers';
import { UPSTREAM_KEY, startUpstreamVideoHost, type UpstreamVideoHost } from '../../support/upstream-video-host';
import { deliveredBytes, fileBytes, settledVideo, videoContext } from '../../support/video-context';
import { testMp4 } from '../../support/video-hosts';

jest.setTimeout(30_000);

let host: UpstreamVideoHost;
let mp4: string;
let provider: VideoProvider;

beforeAll(async () => {
	mp4 = await testMp4();
	host = await startUpstreamVideoHost(mp4);
	provider = upstreamVideoProvider('p-video', { baseUrl: `${host.origin}/v1`, apiKey: UPSTREAM_KEY }, FAST_HOSTS);
});
afterAll(async () => {
	await host.close();
});
beforeEach(() => {
	host.calls.length = 0;
	host.setPendingPolls(4);
	host.setOutcome('completed');
	host.setCancelRoute(true);
});

const context = (inputs = {}, deadline?: number) => videoContext(() => host.calls.length, inputs, deadline);
const until = async (done: () => boolean) => {
	while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
};

test('creates the video, tells its id before polling, passes on its progress and streams the MP4 with the key', async () => {
	const ctx = context();
	const video = await provider.generate(settledVideo({ seconds: 3, resolution: '1080p', aspect_ratio: '4:3', draft: true }, 5), ctx);
	expect(await deliveredBytes(video)).toEqual(await fileBytes(mp4));

	const id = host.videosMade()[0]!;
	const [create, ...rest] = host.calls;
	expect([create!.method, create!.path]).toEqual(['POST', '/v1/videos']);
	expect(create!.json).toEqual({ model: 'p-video', prompt: 'A paper boat on a rainy street', seconds: 3, resolution: '1080p', fps: 24, aspect_ratio: '4:3', draft: true, seed: 5, prompt_upsampling: true, save_audio: true });
	expect(ctx.jobs).toEqual([{ provider: 'upstream', id }]);
	expect(ctx.named).toEqual([{ provider: 'upstream', id }]);
	expect(ctx.callsWhenTold).toEqual([1]);
	expect(rest.map((call) => `${call.method} ${call.path}`)).toEqual([...Array.from({ length: 4 }, () => `GET /v1/videos/${id}`), `GET /v1/videos/${id}/content`]);
	expect(ctx.percents).toEqual([0, 25, 50, 75, 100]);
	expect(host.calls.every((call) => call.headers.authorization === `Bearer ${UPSTREAM_KEY}`)).toBe(true);
});

test('inlines its inputs as data URIs, which the upstream takes as a first frame and an audio track', async () => {
	const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#804020' } }).png().toBuffer();
	const flac = Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.alloc(60)]);
	await provider.generate(settledVideo({ image: 'https://media.example/a.png', audio: 'https://media.example/a.flac' }), context({ image: png, audio: flac }));
	const sent = host.callsTo('POST', '/v1/videos')[0]!.json;
	expect(sent.image).toBe(`data:image/png;base64,${png.toString('base64')}`);
	expect(sent.audio).toBe(`data:audio/flac;base64,${flac.toString('base64')}`);
});

test('a restart follows the video by its id, polling at once, and creates nothing', async () => {
	const made = await fetch(`${host.origin}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'p-video', prompt: 'earlier' }) });
	const { id } = (await made.json()) as { id: string };
	host.calls.length = 0;
	const ctx = context();
	expect(await deliveredBytes(await provider.resume!({ provider: 'upstream', id }, ctx))).toEqual(await fileBytes(mp4));
	expect(host.callsTo('POST', '/v1/videos')).toEqual([]);
	expect(host.calls[0]!.path).toBe(`/v1/videos/${id}`);
	expect(ctx.jobs).toEqual([]);
});

test("cancel reaches the upstream's cancel route, and a host without one (a 404) is passed over", async () => {
	host.setPendingPolls(10_000);
	const ctx = context();
	const running = provider.generate(settledVideo(), ctx);
	await until(() => ctx.jobs.length === 1);
	await provider.cancel!(ctx.jobs[0]!);
	expect(host.callsTo('POST', `/v1/videos/${ctx.jobs[0]!.id}/cancel`)).toHaveLength(1);
	expect(host.statusOf(ctx.jobs[0]!.id)).toBe('failed');
	const ended = await rejectedImageGenError(running);
	expect([ended.status, ended.code, ended.message]).toEqual([502, 'upstream_failed', 'The upstream provider failed: The video was canceled']);

	host.setCancelRoute(false);
	await expect(provider.cancel!({ provider: 'upstream', id: ctx.jobs[0]!.id })).resolves.toBeUndefined();
});

test('a video whose id could not be kept is canceled', async () => {
	const ctx = context();
	ctx.hostJobStarted = async () => {
		throw new Error('the job store is down');
	};
	await expect(provider.generate(settledVideo(), ctx)).rejects.toThrow('the job store is down');
	expect(host.statusOf(host.videosMade().at(-1)!)).toBe('failed');
});

test('an aborted job stops polling and cancels its video', async () => {
	host.setPendingPolls(10_000);
	const ctx = context();
	const running = provider.generate(settledVideo(), ctx);
	await until(() => host.callsTo('GET', '/v1/videos/').length >= 2);
	ctx.controller.abort(new Error('time limit'));
	await expect(running).rejects.toThrow();
	expect(host.callsTo('POST', `/v1/videos/${ctx.jobs[0]!.id}/cancel`)).toHaveLength(1);
	const polls = host.callsTo('GET', '/v1/videos/').length;
	await new Promise((resolve) => setTimeout(resolve, 150));
	expect(host.callsTo('GET', '/v1/videos/')).toHaveLength(polls);
});

test('the create is sent once after a 5xx or a time-out, and again only after a 429', async () => {
	host.script('POST', '/v1/videos', { status: 503, body: { error: { message: 'Service draining' } }, afterMaking: true });
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The upstream provider answered HTTP 503: Service draining']);
	expect(host.callsTo('POST', '/v1/videos')).toHaveLength(1);

	host.calls.length = 0;
	host.script('POST', '/v1/videos', { status: 200, hang: true });
	const ctx = context();
	setTimeout(() => ctx.controller.abort(new Error('time limit')), 300);
	await expect(provider.generate(settledVideo(), ctx)).rejects.toThrow();
	expect(host.callsTo('POST', '/v1/videos')).toHaveLength(1);

	host.calls.length = 0;
	host.script('POST', '/v1/videos', { status: 429, body: { error: { message: 'Rate limit reached' } }, headers: { 'retry-after': '0' } });
	await deliveredBytes(await provider.generate(settledVideo(), context()));
	expect(host.callsTo('POST', '/v1/videos')).toHaveLength(2);
});

test("the host's refusals become our errors: its key refused, its field check, its rate limit, a failed video, an answer not as published", async () => {
	const wrongKey = upstreamVideoProvider('p-video', { baseUrl: `${host.origin}/v1`, apiKey: 'wrong-key' }, FAST_HOSTS);
	const auth = await rejectedImageGenError(wrongKey.generate(settledVideo(), context()));
	expect([auth.status, auth.code, auth.message]).toEqual([502, 'upstream_auth_failed', 'The upstream provider answered HTTP 401: Invalid API key']);

	const tooLong = await rejectedImageGenError(provider.generate({ ...settledVideo(), seconds: 30 }, context()));
	expect([tooLong.status, tooLong.code, tooLong.message]).toEqual([502, 'upstream_rejected', "The upstream provider answered HTTP 400: 'seconds' must be a whole number from 1 to 10; got '30'"]);

	host.script('POST', '/v1/videos', { status: 429, body: { error: { message: 'Rate limit reached' } }, headers: { 'retry-after': '20' } });
	const limited = await rejectedImageGenError(provider.generate(settledVideo(), context({}, Date.now() + 5_000)));
	expect([limited.status, limited.code, limited.retryAfterSeconds]).toEqual([429, 'upstream_rate_limited', 20]);

	host.setOutcome('failed');
	const failed = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([failed.status, failed.code, failed.message]).toEqual([502, 'upstream_failed', 'The upstream provider failed: The pruna provider failed: The prompt was flagged']);
	host.setOutcome('completed');

	host.script('GET', '/v1/videos/', { status: 200, body: { id: 'video_x', status: 'done' } });
	const odd = await rejectedImageGenError(provider.generate(settledVideo(), context()));
	expect([odd.status, odd.code]).toEqual([502, 'upstream_invalid_output']);
});

test('needs its base URL and key at start', () => {
	expect(() => upstreamVideoProvider('p-video', { apiKey: 'k' }, {})).toThrow('providers: p-video=upstream needs UPSTREAM_BASE_URL (--upstream-base-url)');
	expect(() => upstreamVideoProvider('p-video', { baseUrl: 'https://videos.example/v1' }, {})).toThrow('providers: p-video=upstream needs UPSTREAM_API_KEY');
});
