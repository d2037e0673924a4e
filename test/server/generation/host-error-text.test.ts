/**
 * A host's error text is relayed bounded (provider-http.ts, host-text.ts): a 500 or a 429 whose
 * body is megabytes (one JSON message of five million characters, or an HTML error page) is read
 * no further than a small prefix, the rest of the stream dropped, and our message carries at most
 * HOST_TEXT_CHARS of it, cut on a character boundary with an ellipsis. Through the service, the
 * job's stored error and its webhook carry the same bounded text. Against a loopback stand-in
 * (support/oversized-error-host.ts) that records how much of its body it got to send.
 */
import { join, resolve } from 'node:path';
import { ImageGenError } from '../../../core/errors';
import { parseGenerationRequest } from '../../../core/schemas';
import type { SettledRequest } from '../../../server/src/generation/provider';
import { boundedHostText, HOST_ERROR_BYTES, HOST_TEXT_CHARS } from '../../../server/src/generation/providers/host-text';
import { providerJson } from '../../../server/src/generation/providers/provider-http';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, eventually } from '../support/http';
import { OVERSIZED_BYTES, startOversizedErrorHost, type OversizedErrorHost } from '../support/oversized-error-host';
import { startReceiver, type Receiver } from '../support/webhook-receiver';
import { startFakeComfyUI, type FakeComfyUI } from '../support/fake-comfyui';
import { fakeHostsEnv, startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { providerContext } from '../support/host-job-contract';
import { FAST_HOSTS, providerConfig, providersFor } from '../support/providers';
import { buildVideoProviderTable } from '../../../server/src/video/video-providers';
import { PRUNA_KEY, startPrunaVideoHost, type PrunaVideoHost } from '../support/pruna-video-host';
import { REPLICATE_TOKEN, startReplicateVideoHost, type ReplicateVideoHost } from '../support/replicate-video-host';
import { startUpstreamVideoHost, UPSTREAM_KEY, type UpstreamVideoHost } from '../support/upstream-video-host';
import { settledVideo, videoContext } from '../support/video-context';
import { testMp4 } from '../support/video-hosts';

let host: OversizedErrorHost;

beforeAll(async () => {
	host = await startOversizedErrorHost();
});
afterAll(async () => {
	await host?.close();
});
beforeEach(() => {
	host.answers.splice(0);
});

/** The most of our own words around the host's: "The <provider> provider answered HTTP 500: ". */
const OUR_WORDS = 80;

async function refusal(status: number, path: string): Promise<ImageGenError> {
	const failed = await providerJson({ provider: 'replicate', method: 'POST', url: `${host.origin}${path}`, json: { input: {} }, signal: AbortSignal.timeout(10_000), submit: true, retry: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 } }).catch((error: unknown) => error);
	expect(failed).toBeInstanceOf(ImageGenError);
	return failed as ImageGenError;
}

/** The stand-in got to send only a prefix before we hung up: nothing near the whole body was taken in. */
async function expectReadOnlyAPrefix(): Promise<void> {
	await host.settled();
	expect(host.answers).toHaveLength(1);
	expect(host.answers[0]!.completed).toBe(false);
	expect(host.answers[0]!.written).toBeLessThan(OVERSIZED_BYTES / 5);
}

test('a 500 whose JSON message is five million characters: 502 with the message cut to the bound, the body not read on', async () => {
	host.answerWith(500, 'json');
	const error = await refusal(500, '/v1/models/prunaai/p-image/predictions');
	expect(error.status).toBe(502);
	expect(error.code).toBe('upstream_failed');
	expect(error.message).toMatch(/^The replicate provider answered HTTP 500: x{100,}…$/);
	expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	await expectReadOnlyAPrefix();
});

test('a 500 that is a five-megabyte HTML page: 502 with a bounded excerpt, the page not read on', async () => {
	host.answerWith(500, 'html');
	const error = await refusal(500, '/v1/predictions');
	expect(error.status).toBe(502);
	expect(error.message).toContain('500 Internal Server Error');
	expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	await expectReadOnlyAPrefix();
});

test('a 429 with a five-megabyte body: 429 with the bounded text, the body not read on', async () => {
	host.answerWith(429, 'json');
	const error = await refusal(429, '/v1/predictions');
	expect(error.status).toBe(429);
	expect(error.code).toBe('upstream_rate_limited');
	expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	await expectReadOnlyAPrefix();
});

test('the bound cuts on a character boundary: no half of a surrogate pair, an ellipsis where it cut', () => {
	const text = `${'a'.repeat(HOST_TEXT_CHARS - 1)}😀😀😀`;
	const bounded = boundedHostText(text);
	expect(bounded).toBe(`${'a'.repeat(HOST_TEXT_CHARS - 1)}…`);
	expect(boundedHostText('  short text  ')).toBe('short text');
	expect(boundedHostText('b'.repeat(HOST_TEXT_CHARS))).toBe('b'.repeat(HOST_TEXT_CHARS));
	expect(HOST_ERROR_BYTES).toBeLessThanOrEqual(64 * 1024);
});

describe('through the service: the job and its webhook', () => {
	let server: InProcessServer;
	let receiver: Receiver;

	beforeAll(async () => {
		receiver = await startReceiver();
		server = await startInProcessServer({
			args: ['--log-level', 'silent', '--providers', 'p-image=upstream', '--webhook-allow-private'],
			env: { UPSTREAM_BASE_URL: `${host.origin}/v1`, UPSTREAM_API_KEY: 'upstream-test-key' },
		});
	});
	afterAll(async () => {
		await server?.stop({ removeData: true });
		await receiver?.close();
	});

	test('a job failed by a five-megabyte host error stores and delivers the bounded message', async () => {
		host.answerWith(500, 'json');
		const created = await call<{ id: string }>(server, '/v1/images/generations', {
			method: 'POST',
			headers: { prefer: 'respond-async', 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', webhook_url: receiver.url }),
		});
		expect(created.status).toBe(202);
		expect(await eventually(() => receiver.received.length === 1)).toBe(true);
		const job = await call<{ status: string; error: { message: string; code: string } }>(server, `/v1/generations/${created.body.id}`);
		expect(job.body.status).toBe('failed');
		expect(job.body.error.message).toMatch(/HTTP 500: x{100,}…$/);
		expect(job.body.error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
		const delivery = receiver.received[0]!;
		expect(delivery.body.length).toBeLessThan(4_000);
		expect(JSON.parse(delivery.body).data.error).toEqual(job.body.error);
		await expectReadOnlyAPrefix();
	});
});

describe('a job the host ended as failed, in its own words of megabytes', () => {
	let fake: FakeHosts;
	let comfy: FakeComfyUI;
	const long = 'y'.repeat(OVERSIZED_BYTES);
	const request: SettledRequest = { ...parseGenerationRequest({ model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '1:1', seed: 1 }), aspect_ratio: '1:1' };
	const failure = async (selection: string, env: NodeJS.ProcessEnv, args: string[] = []) =>
		(await providersFor(selection, env, FAST_HOSTS, args)['p-image'].generate(request, providerContext()).catch((error: unknown) => error)) as ImageGenError;

	beforeAll(async () => {
		[fake, comfy] = await Promise.all([startFakeHosts(), startFakeComfyUI()]);
	});
	afterAll(async () => {
		await Promise.all([fake?.close(), comfy?.close()]);
	});

	// Replicate's prediction: `status: "failed"` with the model's `error` (its HTTP API reference).
	test('replicate: a failed prediction’s error is cut to the bound', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r-long', status: 'failed', error: long, urls: {} } });
		const error = await failure('p-image=replicate', fakeHostsEnv(fake.origin));
		expect(error).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect(error.message).toMatch(/^The replicate provider failed: y{100,}…$/);
		expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	});

	test('pruna: a failed prediction’s error is cut to the bound', async () => {
		fake.script('POST', '/v1/predictions', { status: 200, body: { id: 'p-long', status: 'failed', error: long } });
		const error = await failure('p-image=pruna', fakeHostsEnv(fake.origin));
		expect(error).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect(error.message).toMatch(/^The pruna provider failed: y{100,}…$/);
		expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	});

	// ComfyUI's history entry: an `execution_error` message with the exception's own text (execution.py).
	test('comfyui: an execution error’s exception message is cut to the bound', async () => {
		comfy.failNext({ node_id: '3', node_type: 'KSampler', exception_type: 'RuntimeError', exception_message: long });
		const workflow = join(resolve(__dirname, '../../../examples/comfyui'), 'sdxl.json');
		const error = await failure('p-image=comfyui', { COMFYUI_BASE_URL: comfy.origin }, ['--comfyui-workflow', `p-image=${workflow}`]);
		expect(error).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect(error.message).toMatch(/^The comfyui provider failed: RuntimeError: y{100,}… at node 3 \(KSampler\)$/);
		expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	});
});

describe('a video the host ended as failed, in its own words of megabytes', () => {
	let pruna: PrunaVideoHost;
	let replicate: ReplicateVideoHost;
	let upstream: UpstreamVideoHost;
	const long = 'z'.repeat(OVERSIZED_BYTES);

	beforeAll(async () => {
		const mp4 = await testMp4();
		[pruna, replicate, upstream] = await Promise.all([startPrunaVideoHost(mp4), startReplicateVideoHost(mp4), startUpstreamVideoHost(mp4)]);
	});
	afterAll(async () => {
		await Promise.all([pruna?.close(), replicate?.close(), upstream?.close()]);
	});

	const env = () => ({
		PRUNA_API_KEY: PRUNA_KEY,
		PRUNA_BASE_URL: `${pruna.origin}/v1`,
		REPLICATE_API_TOKEN: REPLICATE_TOKEN,
		REPLICATE_BASE_URL: `${replicate.origin}/v1`,
		UPSTREAM_API_KEY: UPSTREAM_KEY,
		UPSTREAM_BASE_URL: `${upstream.origin}/v1`,
	});
	const failure = async (host: 'pruna' | 'replicate' | 'upstream') =>
		(await buildVideoProviderTable(providerConfig(`p-video=${host}`, env()), FAST_HOSTS)
			['p-video'].generate(settledVideo(), videoContext(() => 0))
			.catch((error: unknown) => error)) as ImageGenError;
	const expectBounded = (error: ImageGenError, host: string) => {
		expect(error).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect(error.message).toMatch(new RegExp(`^The ${host} provider failed: z{100,}…$`));
		expect(error.message.length).toBeLessThanOrEqual(HOST_TEXT_CHARS + OUR_WORDS);
	};

	test('pruna: a failed prediction’s error', async () => {
		pruna.script('GET', '/v1/predictions/status/', { status: 200, body: { id: 'p-long', status: 'failed', error: long } });
		expectBounded(await failure('pruna'), 'pruna');
	});

	test('replicate: a failed prediction’s error', async () => {
		replicate.script('GET', '/v1/predictions/', { status: 200, body: { id: 'r-long', status: 'failed', error: long, urls: {} } });
		expectBounded(await failure('replicate'), 'replicate');
	});

	test('upstream: a failed video’s error message', async () => {
		upstream.script('GET', '/v1/videos/', { status: 200, body: { id: 'video_long', object: 'video', status: 'failed', error: { code: 'upstream_failed', message: long } } });
		expectBounded(await failure('upstream'), 'upstream');
	});
});

