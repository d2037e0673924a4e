/**
 * A service killed with SIGKILL while hosts work, started again on the same data dir: a job whose
 * host had named it (a Replicate prediction) is followed by its id — never created again — and
 * charged once; a job cut off before any host named it (the sandbox draws in process) ends
 * `failed` / `interrupted`, uncharged. A real process and a real kill: nothing of the first
 * process gets to run after it.
 */
import { MODELS } from '../../../core/models';
import { startServer, type RunningServer } from '../../helpers/server';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { call, eventually } from '../support/http';
import { makeImage } from '../support/media';
import { PRUNA_KEY, startPrunaVideoHost } from '../support/pruna-video-host';
import { testMp4 } from '../support/video-hosts';

let fake: FakeHosts;
let servers: RunningServer[] = [];

beforeAll(async () => {
	fake = await startFakeHosts();
	fake.setImage(await makeImage('png', 64, 64));
});
afterAll(async () => {
	for (const server of servers) await server.stop({ removeData: true }).catch(() => undefined);
	await fake.close();
});

const start = async (dataDir?: string) => {
	const server = await startServer({
		...(dataDir ? { dataDir } : {}),
		// The sandbox takes long enough to be cut off; a lease of 3 s lets the restart take the jobs over
		// soon; the stand-in's output URLs are on loopback, which the address check refuses by default.
		args: ['--allow-private-urls', '--providers', 'p-image=replicate', '--sandbox-delay-ms', '60000', '--job-lease-seconds', '3', '--log-level', 'warn'],
		env: { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
	});
	servers.push(server);
	return server;
};

const submit = async (server: RunningServer, model: string) => {
	const answer = await call<{ id: string }>(server, '/v1/images/generations', {
		method: 'POST',
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify({ model, prompt: 'a lighthouse at dusk', response_format: 'url' }),
	});
	expect(answer.status).toBe(202);
	return answer.body.id;
};

it('kill -9 while hosts work: the named job is followed to its end and charged once, the unnamed one ends interrupted and uncharged', async () => {
	// The prediction outlives the first process by far.
	fake.setPredictionMs(12_000);
	const first = await start();
	const named = await submit(first, 'p-image');
	const unnamed = await submit(first, 'textimage-v2');
	// The host has named its job once the service polls it (the id is durable before the first poll).
	expect(await eventually(() => fake.callsTo('GET', '/v1/predictions/').length > 0, 15_000)).toBe(true);
	await first.stop({ signal: 'SIGKILL' });
	servers = servers.filter((server) => server !== first);

	const second = await start(first.dataDir);
	const ended = async (id: string) => (await call<{ status: string; error: { code: string } | null }>(second, `/v1/generations/${id}`)).body;
	expect(await eventually(async () => (await ended(named)).status === 'succeeded', 40_000, 250)).toBe(true);
	expect(await eventually(async () => (await ended(unnamed)).status !== 'running', 20_000, 250)).toBe(true);
	expect(await ended(unnamed)).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });

	// One create ever; the restart only polled.
	expect(fake.predictionsMade()).toHaveLength(1);
	expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(1);
	const usage = await call<{ total: { images: number; cost_usd: number } }>(second, '/v1/usage');
	expect(usage.body.total).toEqual({ images: 1, cost_usd: MODELS['p-image'].priceUsd });
}, 120_000);

it('kill -9 while a video host works: the video is followed by its prediction id after the restart, made once and charged once', async () => {
	const pruna = await startPrunaVideoHost(await testMp4());
	try {
		// Enough polls that the prediction outlives the first process (the service polls once a second).
		pruna.setPendingPolls(6);
		const startVideo = (dataDir?: string) =>
			startServer({
				...(dataDir ? { dataDir } : {}),
				args: ['--allow-private-urls', '--providers', 'p-video=pruna', '--job-lease-seconds', '3', '--log-level', 'warn'],
				env: { PRUNA_API_KEY: PRUNA_KEY, PRUNA_BASE_URL: `${pruna.origin}/v1` },
			}).then((server) => (servers.push(server), server));
		const first = await startVideo();
		const created = await call<{ id: string; status: string }>(first, '/v1/videos', {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'p-video', prompt: 'a ferry crossing', seconds: 3 }),
		});
		expect(created.body.status).toBe('in_progress');
		expect(await eventually(() => pruna.callsTo('GET', '/v1/predictions/status/').length > 0, 15_000)).toBe(true);
		await first.stop({ signal: 'SIGKILL' });
		servers = servers.filter((server) => server !== first);

		const second = await startVideo(first.dataDir);
		const video = async () => (await call<{ status: string; url: string | null; usage: unknown }>(second, `/v1/videos/${created.body.id}`)).body;
		expect(await eventually(async () => (await video()).status === 'completed', 40_000, 250)).toBe(true);
		expect(await video()).toMatchObject({ usage: { seconds: 3, cost_usd: 0.06 } });
		expect(pruna.predictionsMade()).toHaveLength(1);
		expect(pruna.callsTo('POST', '/v1/predictions')).toHaveLength(1);
		const usage = await call<{ total: { seconds?: number; cost_usd: number } }>(second, '/v1/usage');
		expect(usage.body.total).toMatchObject({ seconds: 3, cost_usd: 0.06 });
	} finally {
		await pruna.close();
	}
}, 120_000);

it('restarted on the same machine after kill -9, the service follows its predecessor\'s jobs at once, without waiting out their lease', async () => {
	fake.setPredictionMs(6_000);
	const startLongLease = (dataDir?: string) =>
		startServer({
			...(dataDir ? { dataDir } : {}),
			// A lease far longer than this test may wait: only knowing the predecessor is gone lets the restart take its jobs.
			args: ['--allow-private-urls', '--providers', 'p-image=replicate', '--sandbox-delay-ms', '60000', '--job-lease-seconds', '600', '--log-level', 'warn'],
			env: { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
		}).then((server) => (servers.push(server), server));
	const first = await startLongLease();
	const before = fake.predictionsMade().length;
	const polledBefore = fake.callsTo('GET', '/v1/predictions/').length;
	const named = await submit(first, 'p-image');
	const unnamed = await submit(first, 'textimage-v2');
	expect(await eventually(() => fake.callsTo('GET', '/v1/predictions/').length > polledBefore, 15_000)).toBe(true);
	await first.stop({ signal: 'SIGKILL' });
	servers = servers.filter((server) => server !== first);

	const second = await startLongLease(first.dataDir);
	const ended = async (id: string) => (await call<{ status: string; error: { code: string } | null }>(second, `/v1/generations/${id}`)).body;
	expect(await eventually(async () => (await ended(unnamed)).status !== 'running', 15_000, 250)).toBe(true);
	expect(await ended(unnamed)).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
	expect(await eventually(async () => (await ended(named)).status === 'succeeded', 30_000, 250)).toBe(true);
	expect(fake.predictionsMade()).toHaveLength(before + 1);
}, 120_000);
