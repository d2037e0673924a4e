/**
 * How hosts' refusals reach our clients: Ideogram's 422 safety rejection is a content filter like
 * the others, and a 429 without `Retry-After` waits as long as the host's own words say ("resets
 * in ~30s"), at least 10 s: retried after that wait while the generation's time limit allows,
 * otherwise answered 429 at once with that wait as our `Retry-After`. Against the loopback
 * stand-ins of the hosts (support/fake-hosts.ts), which answer as the hosts document.
 */
import { ImageGenError } from '../../../core/errors';
import { DEFAULT_RETRY_POLICY } from '../../../core/retry-policy';
import { hintedWaitMs, providerJson, rateLimitWaitMs, type HostRetryPolicy } from '../../../server/src/generation/providers/provider-http';
import { buildTestApp, type InProcessApp } from '../support/app';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { makeImage } from '../support/media';
import { providersFor } from '../support/providers';
import { generateIn } from './support/generate-in';

/** Replicate's answer to a throttled request (HTTP 429, no Retry-After header). */
const throttled = (seconds: number) => ({ title: 'Request was throttled', detail: `Request was throttled. Your rate limit resets in ~${seconds}s.`, status: 429 });

let fake: FakeHosts;
let app: InProcessApp;

beforeAll(async () => {
	fake = await startFakeHosts();
	const env = { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1`, IDEOGRAM_API_KEY: 'ideogram-key', IDEOGRAM_BASE_URL: fake.origin };
	app = await buildTestApp(['--allow-private-urls', '--generation-timeout-seconds', '5'], { providers: providersFor('p-image=replicate,textimage-v2=ideogram', env) });
});

afterAll(async () => {
	await Promise.all([app?.close(), fake?.close()]);
});

beforeEach(async () => {
	fake.reset();
	fake.setImage(await makeImage('png', 1024, 1024));
});

const generate = (body: Record<string, unknown>) => generateIn(app, body);

describe('Ideogram', () => {
	test('a 422 safety rejection is upstream_content_filtered, a 502 like the other content filters', async () => {
		fake.script('POST', '/generate', { status: 422, body: { error: 'Prompt or provided image failed the safety checks' } });
		const answer = await generate({ model: 'textimage-v2', prompt: 'something refused' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_content_filtered' });
		expect(answer.body.error.message).toContain('failed the safety checks');
		expect(fake.callsTo('POST', '/generate')).toHaveLength(1);
	});

	test('its other refusals stay upstream_rejected', async () => {
		fake.script('POST', '/generate', { status: 400, body: { error: 'Invalid input' } });
		const answer = await generate({ model: 'textimage-v2', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.code).toBe('upstream_rejected');
	});
});

describe('a 429 without Retry-After', () => {
	/** Replicate's create, as the provider makes it, with 5 s left of the generation's time limit. */
	const createPrediction = (retry: Partial<HostRetryPolicy>) =>
		providerJson<{ id: string }>({
			provider: 'replicate',
			method: 'POST',
			url: `${fake.origin}/v1/models/a/b/predictions`,
			json: {},
			signal: AbortSignal.timeout(10_000),
			deadline: Date.now() + 5_000,
			retry: { ...DEFAULT_RETRY_POLICY, ...retry },
		});

	test('the host’s own words give the wait', () => {
		expect(hintedWaitMs(JSON.stringify(throttled(30)))).toBe(30_000);
		expect(hintedWaitMs('Too many requests, please try again in 45 seconds')).toBe(45_000);
		expect(hintedWaitMs('Rate limit exceeded. Retry after 2 minutes.')).toBe(120_000);
		expect(hintedWaitMs('slow down: retry in 1500ms')).toBe(1_500);
		expect(hintedWaitMs('Too Many Requests')).toBeUndefined();
		expect(hintedWaitMs('')).toBeUndefined();
	});

	test('the wait is the hint, at least 10 s; a Retry-After header still decides when present', () => {
		expect(rateLimitWaitMs(undefined, JSON.stringify(throttled(30)))).toBe(30_000);
		expect(rateLimitWaitMs(undefined, JSON.stringify(throttled(2)))).toBe(10_000);
		expect(rateLimitWaitMs(undefined, 'Too Many Requests')).toBe(10_000);
		expect(rateLimitWaitMs('3', JSON.stringify(throttled(30)))).toBe(3_000);
	});

	test('a wait past the time limit: answered 429 at once with the host’s wait as Retry-After, not retried after 1 s', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: throttled(30) });
		const started = Date.now();
		const answer = await generate({ model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(429);
		expect(answer.headers.get('retry-after')).toBe('30');
		expect(answer.body.error.code).toBe('upstream_rate_limited');
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(1);
		expect(Date.now() - started).toBeLessThan(2_000);
	});

	test('a wait within the time limit: retried once it has passed, and the generation succeeds', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: throttled(1) });
		const started = Date.now();
		// The 10 s floor lowered for this test, so the host's ~1 s is what decides the wait.
		const answer = await createPrediction({ rateLimitFloorMs: 0 });
		const calls = fake.callsTo('POST', '/v1/models/');
		expect(calls).toHaveLength(2);
		expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(1_000);
		expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
		expect(answer.id).toMatch(/^r\d+$/);
	});

	test('retries that run out answer 429 with the last wait', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: throttled(0) }, 4);
		const failure = await createPrediction({ maxRetries: 3, rateLimitFloorMs: 10 }).catch((error: unknown) => error);
		expect(failure).toBeInstanceOf(ImageGenError);
		expect(failure).toMatchObject({ status: 429, code: 'upstream_rate_limited', retryAfterSeconds: 1 });
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(4);
	});
});
