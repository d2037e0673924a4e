/**
 * Generations as host jobs (generation/provider.ts): the hosts that name their jobs (Replicate,
 * Pruna) tell `hostJobStarted` the id as soon as the create answers and before they poll; a job
 * cut off by a restart is followed again by its id (`resume`) without a second create; `cancel`
 * reaches the host's cancel route; a create is never sent twice (repeated only after a 429, never
 * after a 5xx, and a chain moves on only when the host provably made nothing). Against the
 * loopback stand-ins of the hosts (support/fake-hosts.ts).
 */
import { parseGenerationRequest } from '../../../core/schemas';
import type { GenerationProvider, HostJobRef, SettledRequest } from '../../../server/src/generation/provider';
import { NothingMadeError } from '../../../server/src/generation/providers/provider-http';
import { prunaProvider } from '../../../server/src/generation/providers/pruna';
import { replicateProvider } from '../../../server/src/generation/providers/replicate';
import { closedPort } from '../support/closed-port';
import { createPredictionAt, fakeHostsEnv, startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { providerContext } from '../support/host-job-contract';
import { eventually } from '../support/http';
import { makeImage } from '../support/media';
import { FAST_HOSTS, providerConfig, providersFor } from '../support/providers';
import { ImageBytes } from '../../../server/src/media/image-bytes';

let fake: FakeHosts;
let env: NodeJS.ProcessEnv;
let replicate: GenerationProvider;
let pruna: GenerationProvider;
/** `p-image=pruna|replicate`. */
let chain: GenerationProvider;

beforeAll(async () => {
	fake = await startFakeHosts();
	env = fakeHostsEnv(fake.origin);
	const settings = providerConfig('p-image=pruna|replicate', env).providerSettings;
	replicate = replicateProvider('p-image', settings.replicate, FAST_HOSTS);
	pruna = prunaProvider('p-image', settings.pruna, FAST_HOSTS);
	chain = providersFor('p-image=pruna|replicate', env)['p-image'];
});

afterAll(async () => {
	await fake?.close();
});

beforeEach(async () => {
	fake.reset();
	fake.setImage(await makeImage('png', 32, 32));
});

const request = (model: 'p-image' | 'p-image-edit' = 'p-image'): SettledRequest => ({
	...parseGenerationRequest({ model, prompt: 'A lighthouse', aspect_ratio: '16:9', seed: 1, ...(model === 'p-image-edit' ? { images: ['aGk='] } : {}) }),
	aspect_ratio: '16:9',
});

const replicateCreates = () => fake.callsTo('POST', '/v1/models/');
const prunaCreates = () => fake.callsTo('POST', '/v1/predictions').filter((call) => call.path === '/v1/predictions');
/** Status polls of either host (Pruna's output downloads share the prefix). */
const polls = () => fake.callsTo('GET', '/v1/predictions/').filter((call) => !call.path.startsWith('/v1/predictions/delivery/'));

/** A prediction made at the stand-in before the test (by an earlier run of the service). */
async function madeBefore(host: 'replicate' | 'pruna', pendingPolls: number): Promise<string> {
	fake.setPendingPolls(pendingPolls);
	const id = await createPredictionAt(fake.origin, host);
	fake.reset();
	fake.setImage(await makeImage('png', 32, 32));
	return id;
}

describe('the host names the job before it is polled', () => {
	test('replicate: the create waits at most 5 s, and hostJobStarted gets the prediction id, awaited, before the first poll', async () => {
		fake.setPendingPolls(2);
		const told: HostJobRef[] = [];
		let toldAt = 0;
		const images = await replicate.generate(
			request(),
			providerContext({
				hostJobStarted: async (job) => {
					expect(polls()).toHaveLength(0);
					await new Promise((resolve) => setTimeout(resolve, 100));
					told.push(job);
					toldAt = Date.now();
				},
			}),
		);
		const [id] = fake.predictionsMade();
		expect(told).toEqual([{ provider: 'replicate', id }]);
		expect(replicateCreates()[0]!.headers.prefer).toBe('wait=5');
		expect(polls()[0]!.at).toBeGreaterThanOrEqual(toldAt);
		expect(images).toEqual([{ url: `${fake.origin}/out/${id}.png` }]);
	});

	test('replicate: a prediction that ends within the create’s wait is answered by the create, and no job is told', async () => {
		fake.setPredictionMs(300);
		const hostJobStarted = jest.fn(async () => undefined);
		const started = Date.now();
		const images = await replicate.generate(request(), providerContext({ hostJobStarted }));
		expect(Date.now() - started).toBeGreaterThanOrEqual(250);
		expect(hostJobStarted).not.toHaveBeenCalled();
		expect(polls()).toHaveLength(0);
		expect(images).toHaveLength(1);
	});

	test('the stand-in holds a create no longer than the wait asked', async () => {
		fake.setPredictionMs(3_000);
		const started = Date.now();
		const response = await fetch(`${fake.origin}/v1/models/prunaai/p-image/predictions`, { method: 'POST', headers: { authorization: 'Bearer r8_token', prefer: 'wait=1', 'content-type': 'application/json' }, body: '{"input":{}}' });
		const prediction = (await response.json()) as { status: string; urls: { get: string; cancel: string } };
		expect(Date.now() - started).toBeGreaterThanOrEqual(950);
		expect(Date.now() - started).toBeLessThan(2_500);
		expect(prediction.status).toBe('processing');
		expect(prediction.urls.cancel).toMatch(/\/cancel$/);
	});

	test('pruna: asked asynchronously (no Try-Sync, which holds a create up to 60 s), its id told before the first status poll', async () => {
		fake.setPendingPolls(2);
		const told: Array<{ job: HostJobRef; pollsBefore: number }> = [];
		const images = await pruna.generate(request(), providerContext({ hostJobStarted: async (job) => void told.push({ job, pollsBefore: polls().length }) }));
		const [id] = fake.predictionsMade();
		expect(told).toEqual([{ job: { provider: 'pruna', id }, pollsBefore: 0 }]);
		expect(prunaCreates()[0]!.headers['try-sync']).toBeUndefined();
		expect(polls().map((call) => call.path)).toEqual([`/v1/predictions/status/${id}`, `/v1/predictions/status/${id}`]);
		expect(images).toStrictEqual([ImageBytes.owned(expect.any(Buffer))]);
	});

	test('pruna without hostJobStarted keeps Try-Sync, which the stand-in honours', async () => {
		fake.setPredictionMs(300);
		await pruna.generate(request(), providerContext());
		expect(prunaCreates()[0]!.headers['try-sync']).toBe('true');
		expect(fake.callsTo('GET', '/v1/predictions/status/')).toHaveLength(0);
	});

	test('a hostJobStarted that fails: the prediction is canceled (no one would follow it) and the failure is the answer', async () => {
		fake.setPendingPolls(1_000_000);
		const failure = await replicate.generate(request(), providerContext({ hostJobStarted: async () => Promise.reject(new Error('job store unavailable')) })).catch((error: unknown) => error);
		expect(failure).toMatchObject({ message: 'job store unavailable' });
		const [id] = fake.predictionsMade();
		expect(fake.callsTo('POST', `/v1/predictions/${id}/cancel`)).toHaveLength(1);
		expect(polls()).toHaveLength(0);
	});
});

describe('resume: a job accepted before a restart is followed by its id, never created again', () => {
	test.each(['replicate', 'pruna'] as const)('%s: polls the known id to its end, no create', async (host) => {
		const id = await madeBefore(host, 2);
		const provider = host === 'replicate' ? replicate : pruna;
		const images = await provider.resume!({ provider: host, id }, providerContext());
		expect(fake.calls.filter((call) => call.method === 'POST')).toEqual([]);
		expect(polls().length).toBeGreaterThanOrEqual(2);
		expect(polls().every((call) => call.path.endsWith(`/${id}`))).toBe(true);
		expect(images).toHaveLength(1);
	});

	test.each(['replicate', 'pruna'] as const)('%s: an id the host does not know is a 502 naming its answer, and nothing is created', async (host) => {
		const provider = host === 'replicate' ? replicate : pruna;
		const failure = await provider.resume!({ provider: host, id: `${host[0]}999999` }, providerContext()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_rejected' });
		expect(fake.calls.filter((call) => call.method === 'POST')).toEqual([]);
	});

	test('replicate: a resumed prediction is canceled when the caller stops', async () => {
		const id = await madeBefore('replicate', 1_000_000);
		const stop = new AbortController();
		const resumed = replicate.resume!({ provider: 'replicate', id }, providerContext({ signal: stop.signal })).catch((error: unknown) => error);
		expect(await eventually(() => polls().length > 0)).toBe(true);
		stop.abort(new Error('shutting down'));
		await resumed;
		expect(fake.callsTo('POST', `/v1/predictions/${id}/cancel`)).toHaveLength(1);
		expect(replicateCreates()).toHaveLength(0);
	});

	test('replicate: a caller that stops while the create waits still gets the prediction canceled, once it is named', async () => {
		// The create is held by Prefer: wait while the prediction runs; the caller leaves meanwhile.
		fake.setPredictionMs(60_000);
		const stop = new AbortController();
		const running = replicate.generate(request(), providerContext({ signal: stop.signal })).catch((error: unknown) => error);
		expect(await eventually(() => replicateCreates().length === 1)).toBe(true);
		stop.abort(new Error('client gone'));
		await running;
		const [id] = fake.predictionsMade();
		expect(await eventually(() => fake.callsTo('POST', `/v1/predictions/${id}/cancel`).length === 1, 10_000)).toBe(true);
	});

	test('a chain resumes with the member that took the job, and refuses a host it does not have', async () => {
		const [onReplicate, onPruna] = [await madeBefore('replicate', 1), await madeBefore('pruna', 1)];
		expect(chain.hasJobIds).toBe(true);
		expect(await chain.resume!({ provider: 'replicate', id: onReplicate }, providerContext())).toHaveLength(1);
		expect(await chain.resume!({ provider: 'pruna', id: onPruna }, providerContext())).toHaveLength(1);
		expect(polls().map((call) => call.path)).toEqual([`/v1/predictions/${onReplicate}`, `/v1/predictions/status/${onPruna}`]);
		await expect(chain.resume!({ provider: 'ideogram', id: 'x' }, providerContext())).rejects.toThrow(/'ideogram' is not a member of the provider chain pruna\|replicate/);
		expect(fake.calls.filter((call) => call.method === 'POST')).toEqual([]);
	});

	test('the sandbox names no jobs', () => {
		const sandbox = providersFor('', env)['p-image'];
		expect(sandbox.hasJobIds).toBeFalsy();
		expect(sandbox.resume).toBeUndefined();
	});
});

describe('cancel', () => {
	test('replicate: reaches POST /predictions/<id>/cancel with the token, and the prediction reads canceled', async () => {
		const id = await madeBefore('replicate', 1_000_000);
		await replicate.cancel!({ provider: 'replicate', id });
		const [call] = fake.callsTo('POST', `/v1/predictions/${id}/cancel`);
		expect(call!.headers.authorization).toBe('Bearer r8_token');
		const status = (await (await fetch(`${fake.origin}/v1/predictions/${id}`)).json()) as { status: string };
		expect(status.status).toBe('canceled');
	});

	test('through a chain: the member named; pruna has no cancel route, so nothing is sent', async () => {
		const id = await madeBefore('replicate', 1_000_000);
		await chain.cancel!({ provider: 'replicate', id });
		expect(fake.callsTo('POST', `/v1/predictions/${id}/cancel`)).toHaveLength(1);
		expect(pruna.cancel).toBeUndefined();
		await chain.cancel!({ provider: 'pruna', id: 'p1' });
		expect(fake.calls).toHaveLength(1);
	});

	test('a cancel the host refuses is best effort: it does not throw', async () => {
		await expect(replicate.cancel!({ provider: 'replicate', id: 'r424242' })).resolves.toBeUndefined();
		expect(fake.callsTo('POST', '/v1/predictions/r424242/cancel')).toHaveLength(1);
	});
});

describe('never two creates for one job', () => {
	test.each([
		['replicate', '/v1/models/'],
		['pruna', '/v1/predictions'],
	] as const)('%s: a 502 to the create after the prediction was made is not repeated: one create, one prediction, a plain 502', async (host, path) => {
		fake.script('POST', path, { status: 502, body: { detail: 'Bad Gateway' }, afterMaking: true });
		const provider = host === 'replicate' ? replicate : pruna;
		const failure = await provider.generate(request(), providerContext()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect(failure).not.toBeInstanceOf(NothingMadeError);
		expect(fake.predictionsMade()).toHaveLength(1);
		expect(host === 'replicate' ? replicateCreates() : prunaCreates()).toHaveLength(1);
	});

	test('a chain does not move on after a 5xx to the create: the first host may have made it', async () => {
		fake.script('POST', '/v1/predictions', { status: 502, body: { error: 'upstream connect error' }, afterMaking: true });
		const failure = await chain.generate(request(), providerContext()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect([prunaCreates().length, replicateCreates().length]).toEqual([1, 0]);
		expect(fake.predictionsMade()).toHaveLength(1);
	});

	test('a 5xx the host sent before making anything is not repeated either', async () => {
		fake.script('POST', '/v1/models/', { status: 503, body: { detail: 'Service Unavailable' }, headers: { 'retry-after': '0' } }, 4);
		await expect(replicate.generate(request(), providerContext())).rejects.toMatchObject({ status: 502 });
		expect(replicateCreates()).toHaveLength(1);
	});

	test('a 429 to the create is repeated, and makes one prediction', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: { detail: 'Request was throttled.' }, headers: { 'retry-after': '0' } });
		await replicate.generate(request(), providerContext());
		expect(replicateCreates()).toHaveLength(2);
		expect(fake.predictionsMade()).toHaveLength(1);
	});

	test('a lasting 429 (nothing made) sends a chain on to the next host', async () => {
		fake.script('POST', '/v1/predictions', { status: 429, body: { error: { code: 'QUOTA_EXCEEDED', message: 'Too many requests' } }, headers: { 'retry-after': '0' } }, 4);
		const images = await chain.generate(request(), providerContext());
		expect([prunaCreates().length, replicateCreates().length]).toEqual([4, 1]);
		expect(images).toEqual([{ url: expect.stringContaining('/out/r') }]);
	});

	test('a refused connection (nothing made) sends a chain on to the next host', async () => {
		const down = providersFor('p-image=pruna|replicate', { ...env, PRUNA_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1` })['p-image'];
		expect(await down.generate(request(), providerContext())).toHaveLength(1);
		expect(replicateCreates()).toHaveLength(1);
	});

	test('status polls keep their retries', async () => {
		fake.setPendingPolls(1);
		fake.script('GET', '/v1/predictions/r', { status: 503, body: { detail: 'busy' }, headers: { 'retry-after': '0' } });
		expect(await replicate.generate(request(), providerContext())).toHaveLength(1);
		expect(polls()).toHaveLength(2);
		expect(replicateCreates()).toHaveLength(1);
	});

	test('input uploads are no create: retried after a 5xx, one prediction made', async () => {
		const edit = prunaProvider('p-image-edit', providerConfig('p-image-edit=pruna', env).providerSettings.pruna, FAST_HOSTS);
		fake.script('POST', '/v1/files', { status: 503, body: { error: 'busy' }, headers: { 'retry-after': '0' } });
		expect(await edit.generate(request('p-image-edit'), providerContext())).toHaveLength(1);
		expect(fake.callsTo('POST', '/v1/files')).toHaveLength(2);
		expect(fake.predictionsMade()).toHaveLength(1);
	});
});
