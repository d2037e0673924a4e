/** The usage ledger: per key, per model and day, persisted across restarts, behind GET /v1/usage. */
import { startServer, type RunningServer } from '../../helpers/server';
import { call, postJson } from '../support/http';

const KEY_A = 'usage-key-aaaaaaaaaaaa';
const KEY_B = 'usage-key-bbbbbbbbbbbb';
let server: RunningServer;

beforeAll(async () => {
	server = await startServer({ apiKey: null, args: ['--api-keys', `${KEY_A},${KEY_B}`, '--prices', 'textimage-v2=0.05'] });
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
	server = await startServer({ apiKey: null, dataDir: server.dataDir, args: ['--api-keys', `${KEY_A},${KEY_B}`] });
	expect((await usage(KEY_A)).body).toEqual(before);
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
