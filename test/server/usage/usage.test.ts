/** The usage ledger: per key, per model and day, persisted across restarts, behind GET /v1/usage. */
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, postJson } from '../support/http';

const KEY_A = 'usage-key-aaaaaaaaaaaa';
const KEY_B = 'usage-key-bbbbbbbbbbbb';
const KEY_VIDEO = 'usage-key-vvvvvvvvvvvv';
const ADMIN_KEY = 'usage-admin-0123456789';
const start = (dataDir?: string) =>
	startInProcessServer({ apiKey: [KEY_A, KEY_B, KEY_VIDEO].join(','), dataDir, args: ['--prices', 'textimage-v2=0.05', '--admin-key', ADMIN_KEY] });
let server: InProcessServer;

beforeAll(async () => {
	server = await start();
});

afterAll(async () => {
	await server?.stop({ removeData: true });
});

const generate = (key: string, body: Record<string, unknown>) => postJson({ ...server, apiKey: key }, '/v1/images/generations', body);
const usage = (key: string, query = '') => call({ ...server, apiKey: key }, `/v1/usage${query}`);

test('a mixed run: totals per key and model, failed requests not counted, prices from the catalog and overrides', async () => {
	const today = new Date().toISOString().slice(0, 10);
	const answers = await Promise.all([
		generate(KEY_A, { model: 'p-image', prompt: 'one', response_format: 'b64_json' }),
		generate(KEY_A, { model: 'p-image', prompt: 'two', response_format: 'b64_json' }),
		generate(KEY_A, { model: 'p-image', prompt: 'three', response_format: 'b64_json' }),
		generate(KEY_A, { model: 'textimage-v2', prompt: 'four', response_format: 'b64_json' }),
		generate(KEY_A, { model: 'p-image', prompt: '' }),
		generate(KEY_B, { model: 'p-image-edit', prompt: 'five', images: ['https://example.invalid/a.png'] }),
	]);
	expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 400, 400]);
	await generate(KEY_B, { model: 'p-image', prompt: 'six', response_format: 'b64_json' });

	const a = await usage(KEY_A);
	expect(a.status).toBe(200);
	expect(a.body).toEqual({
		object: 'usage',
		from: null,
		to: null,
		data: [
			{ date: today, model: 'p-image', images: 3, cost_usd: 0.0105 },
			{ date: today, model: 'textimage-v2', images: 1, cost_usd: 0.05 },
		],
		total: { images: 4, cost_usd: 0.0605 },
	});
	expect((await usage(KEY_B)).body.data).toEqual([{ date: today, model: 'p-image', images: 1, cost_usd: 0.0035 }]);
	expect((await usage(KEY_A, `?from=${today}&to=${today}`)).body.total.images).toBe(4);
	expect((await usage(KEY_A, '?to=2000-01-01')).body).toMatchObject({ data: [], total: { images: 0, cost_usd: 0 } });
});

test('totals survive a restart (the ledger is a file in the data dir)', async () => {
	const before = (await usage(KEY_A)).body;
	await server.stop();
	server = await start(server.dataDir);
	expect((await usage(KEY_A)).body).toEqual(before);
});

test('seconds of video are answered per row and in the total where there are any; rows of images alone keep their shape', async () => {
	const today = new Date().toISOString().slice(0, 10);
	const videoKeyId = apiKeyIdOf(KEY_VIDEO);
	const line = (requestId: string, seconds: number, costUsd: number) => ({ apiKeyId: videoKeyId, model: 'p-video', images: 0, seconds, costUsd, requestId });
	// What a finished video job records (the ledger the routes read), a retried record among them.
	await Promise.all([server.app.usageLedger.record(line('video-1', 5, 0.1)), server.app.usageLedger.record(line('video-2', 10, 0.2)), server.app.usageLedger.record(line('video-1', 5, 0.1))]);
	expect((await generate(KEY_VIDEO, { model: 'p-image', prompt: 'a still', response_format: 'b64_json' })).status).toBe(200);

	const answer = await usage(KEY_VIDEO);
	expect(answer.status).toBe(200);
	expect(answer.body).toEqual({
		object: 'usage',
		from: null,
		to: null,
		data: [
			{ date: today, model: 'p-image', images: 1, cost_usd: 0.0035 },
			{ date: today, model: 'p-video', images: 0, seconds: 15, cost_usd: 0.3 },
		],
		total: { images: 1, seconds: 15, cost_usd: 0.3035 },
	});
	const admin = await call({ ...server, apiKey: ADMIN_KEY }, `/v1/admin/usage?key_id=${videoKeyId}`);
	expect(admin.status).toBe(200);
	expect(admin.body.data).toEqual([
		{ date: today, key_id: videoKeyId, model: 'p-image', images: 1, cost_usd: 0.0035 },
		{ date: today, key_id: videoKeyId, model: 'p-video', images: 0, seconds: 15, cost_usd: 0.3 },
	]);
	expect(admin.body.total).toEqual({ images: 1, seconds: 15, cost_usd: 0.3035 });
});

test.each([
	['?from=yesterday', 'from'],
	['?to=2026-13-45', 'to'],
	['?from=2026-02-01&to=2026-01-01', 'from'],
	['?day=2026-01-01', 'day'],
	// Days that do not exist are refused, not rolled over into the next month.
	['?from=2026-02-30', 'from'],
	['?to=2026-04-31', 'to'],
])('%s is refused naming %s', async (query, param) => {
	const answer = await usage(KEY_A, query);
	expect(answer.status).toBe(400);
	expect(answer.body.error.param).toBe(param);
});

test('usage needs a key like every /v1 route', async () => {
	const answer = await call(server, '/v1/usage', { auth: null });
	expect(answer.status).toBe(401);
});
