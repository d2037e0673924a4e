/**
 * The video provider table: sandbox unless `--providers` names a video host for p-video; each
 * named host built with its settings (and refused at start without them); a fallback chain that
 * passes to the next host only when the previous one provably made nothing, and follows or
 * cancels a job by the member that started it.
 */
import { ImageGenError } from '../../../core/errors';
import { NothingMadeError } from '../../../server/src/generation/providers/provider-http';
import type { ProviderVideo, VideoProvider } from '../../../server/src/video/video-provider';
import { buildVideoProviderTable, videoProviderChain } from '../../../server/src/video/video-providers';
import { closedPort } from '../support/closed-port';
import { FAST_HOSTS, providerConfig } from '../support/providers';
import { PRUNA_KEY, startPrunaVideoHost, type PrunaVideoHost } from '../support/pruna-video-host';
import { REPLICATE_TOKEN, startReplicateVideoHost, type ReplicateVideoHost } from '../support/replicate-video-host';
import { settledVideo, videoContext } from '../support/video-context';
import { testMp4 } from '../support/video-hosts';

jest.setTimeout(30_000);

let pruna: PrunaVideoHost;
let replicate: ReplicateVideoHost;

beforeAll(async () => {
	const mp4 = await testMp4();
	[pruna, replicate] = await Promise.all([startPrunaVideoHost(mp4), startReplicateVideoHost(mp4)]);
});
afterAll(async () => {
	await Promise.all([pruna.close(), replicate.close()]);
});
beforeEach(() => {
	pruna.calls.length = 0;
	replicate.calls.length = 0;
});

const env = () => ({ PRUNA_API_KEY: PRUNA_KEY, PRUNA_BASE_URL: `${pruna.origin}/v1`, REPLICATE_API_TOKEN: REPLICATE_TOKEN, REPLICATE_BASE_URL: `${replicate.origin}/v1` });
const tableOf = (selection: string, hosts: NodeJS.ProcessEnv = env()) => buildVideoProviderTable(providerConfig(selection, hosts), FAST_HOSTS);
const context = () => videoContext(() => pruna.calls.length + replicate.calls.length);

test('p-video stays on the sandbox unless --providers names a video host for it', () => {
	expect(tableOf('p-image=pruna')['p-video'].name).toBe('sandbox');
	for (const name of ['pruna', 'replicate', 'sandbox'] as const) expect(tableOf(`p-video=${name}`)['p-video'].name).toBe(name);
	expect(tableOf('p-video=upstream', { UPSTREAM_BASE_URL: 'https://videos.example/v1', UPSTREAM_API_KEY: 'k' })['p-video'].name).toBe('upstream');
});

test('a named host without its settings is refused at start, naming the setting', () => {
	expect(() => tableOf('p-video=pruna', {})).toThrow('providers: p-video=pruna needs PRUNA_API_KEY');
	expect(() => tableOf('p-video=replicate', {})).toThrow('providers: p-video=replicate needs REPLICATE_API_TOKEN');
	expect(() => tableOf('p-video=upstream', {})).toThrow('providers: p-video=upstream needs UPSTREAM_BASE_URL (--upstream-base-url)');
});

test('a host that makes no video is refused by the table too, for a selection built without the parser', () => {
	const config = providerConfig('p-image=pruna', env());
	expect(() => buildVideoProviderTable({ ...config, providerSelection: { 'p-video': 'ideogram' } })).toThrow('providers: ideogram makes no video; p-video is served by sandbox, upstream, replicate, pruna');
});

test('a chain passes to the next host after a 429 to the create, and the job is that host\'s', async () => {
	const chain = tableOf('p-video=pruna|replicate')['p-video'];
	expect([chain.name, chain.hasJobIds]).toEqual(['pruna|replicate', true]);
	pruna.script('POST', '/v1/predictions', { status: 429, body: { error: { message: 'Rate limit exceeded' } }, headers: { 'retry-after': '30' } });
	const ctx = { ...context(), deadline: Date.now() + 5_000 };
	const video = await chain.generate(settledVideo(), ctx);
	const id = replicate.predictionsMade().at(-1)!;
	expect(video).toEqual({ url: `${replicate.cdn.origin}/xezq/${id}/output.mp4` });
	expect(ctx.jobs).toEqual([{ provider: 'replicate', id }]);
});

test('a chain passes on when the first host refuses the connection', async () => {
	const port = await closedPort();
	const chain = tableOf('p-video=pruna|replicate', { ...env(), PRUNA_BASE_URL: `http://127.0.0.1:${port}/v1` })['p-video'];
	await chain.generate(settledVideo(), context());
	expect(replicate.callsTo('POST', '/v1/models/prunaai/p-video/predictions')).toHaveLength(1);
});

test('a chain ends at a 5xx to the create or a failed prediction: the first host may have made the video', async () => {
	const chain = tableOf('p-video=pruna|replicate')['p-video'];
	pruna.script('POST', '/v1/predictions', { status: 502, body: { error: { message: 'Bad gateway' } }, afterMaking: true });
	const gateway = await chain.generate(settledVideo(), context()).catch((error: unknown) => error);
	expect(gateway).toBeInstanceOf(ImageGenError);
	expect(gateway).not.toBeInstanceOf(NothingMadeError);
	pruna.setOutcome('failed');
	await expect(chain.generate(settledVideo(), context())).rejects.toThrow('The pruna provider failed');
	pruna.setOutcome('succeeded');
	expect(replicate.calls).toEqual([]);
});

test("a chain follows and cancels a job by the member that started it", async () => {
	const chain = tableOf('p-video=pruna|replicate')['p-video'];
	const made = await fetch(`${replicate.origin}/v1/models/prunaai/p-video/predictions`, { method: 'POST', headers: { authorization: `Bearer ${REPLICATE_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: { prompt: 'earlier' } }) });
	const { id } = (await made.json()) as { id: string };
	expect(await chain.resume!({ provider: 'replicate', id }, context())).toEqual({ url: `${replicate.cdn.origin}/xezq/${id}/output.mp4` });
	expect(pruna.calls).toEqual([]);

	const again = await fetch(`${replicate.origin}/v1/models/prunaai/p-video/predictions`, { method: 'POST', headers: { authorization: `Bearer ${REPLICATE_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ input: { prompt: 'earlier' } }) });
	const second = ((await again.json()) as { id: string }).id;
	await chain.cancel!({ provider: 'replicate', id: second });
	expect(replicate.statusOf(second)).toBe('canceled');
	// Pruna has no cancel: nothing is sent for its job.
	await chain.cancel!({ provider: 'pruna', id: 'pv1' });
	expect(pruna.calls).toEqual([]);

	await expect(chain.resume!({ provider: 'comfyui', id: 'x' }, context())).rejects.toMatchObject({ status: 500, code: 'provider_unknown' });
});

test('a chain of one is that host, and a chain of none is refused', () => {
	const alone: VideoProvider = { name: 'only', generate: async (): Promise<ProviderVideo> => ({ url: 'https://cdn.example/v.mp4' }) };
	expect(videoProviderChain([alone])).toBe(alone);
	expect(() => videoProviderChain([])).toThrow('a provider chain needs at least one provider');
});
