/**
 * POST /v1/images/generations as OpenAI's images clients call it: `n` images (each charged, seed + i,
 * all or nothing), `size`, the fields accepted and ignored, and `--model-aliases` (requests, the
 * gpt-image answer form, and GET /v1/models).
 */
import { buildTestApp, inject, startInProcessServer, type InProcessApp, type InProcessServer } from '../support/app';
import { startCountingUpstream, type CountingUpstream } from '../support/counting-upstream';
import { TEST_API_KEY } from '../../helpers/server';

const ADMIN_KEY = 'openai-images-admin-0123456789';
const P_IMAGE_PRICE = 0.0035;

let service: InProcessApp;
beforeAll(async () => {
	service = await buildTestApp(['--admin-key', ADMIN_KEY, '--model-aliases', 'dall-e-3=p-image,gpt-image-1=p-image,dall-e-2=textimage-v2']);
});
afterAll(() => service.close());

const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as any });
const generate = (body: Record<string, unknown>, authorization = service.auth.authorization) =>
	service
		.request('/v1/images/generations', { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'a lighthouse', ...body }) })
		.then(json);
const admin = (method: string, path: string, body?: unknown) =>
	service
		.request(path, { method, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })
		.then(json);

describe('n', () => {
	it('makes n images with seeds seed + i, each charged, in one job', async () => {
		const key = (await admin('POST', '/v1/admin/keys', { name: 'three', budget_usd: 1 })).body;
		const answer = await generate({ model: 'p-image', n: 3, seed: 100 }, `Bearer ${key.key}`);
		expect(answer.status).toBe(200);
		expect(answer.body.data.map((image: { seed: number }) => image.seed)).toEqual([100, 101, 102]);
		expect(new Set(answer.body.data.map((image: { url: string }) => image.url)).size).toBe(3);
		expect(answer.body.usage).toEqual({ images: 3, cost_usd: 3 * P_IMAGE_PRICE });
		const pictures = await Promise.all(answer.body.data.map(async (image: { url: string }) => Buffer.from(await (await service.request(image.url)).arrayBuffer()).toString('base64')));
		expect(new Set(pictures).size).toBe(3);
		expect((await admin('GET', `/v1/admin/keys/${key.id}`)).body.budget.spent_usd).toBeCloseTo(3 * P_IMAGE_PRICE, 10);
		const usage = await json(await service.request('/v1/usage', { headers: { authorization: `Bearer ${key.key}` } }));
		expect(usage.body.total).toEqual({ images: 3, cost_usd: 3 * P_IMAGE_PRICE });
		const jobs = await json(await service.request('/v1/generations', { headers: { authorization: `Bearer ${key.key}` } }));
		expect(jobs.body.data).toHaveLength(1);
		expect(jobs.body.data[0].result.usage.images).toBe(3);
	});

	it('wraps seed + i into the seed range', async () => {
		const answer = await generate({ model: 'p-image', n: 2, seed: 2_147_483_647, response_format: 'b64_json' });
		expect(answer.body.data.map((image: { seed: number }) => image.seed)).toEqual([2_147_483_647, 0]);
	});

	it('is admitted by the budget only when all n images fit in it', async () => {
		const key = (await admin('POST', '/v1/admin/keys', { name: 'two', budget_usd: 2 * P_IMAGE_PRICE })).body;
		const refused = await generate({ model: 'p-image', n: 3 }, `Bearer ${key.key}`);
		expect(refused.status).toBe(402);
		expect((await generate({ model: 'p-image', n: 2 }, `Bearer ${key.key}`)).status).toBe(200);
		expect((await admin('GET', `/v1/admin/keys/${key.id}`)).body.budget.spent_usd).toBeCloseTo(2 * P_IMAGE_PRICE, 10);
	});

	it('refuses 11 and 0, naming n', async () => {
		for (const n of [11, 0]) {
			const refused = await generate({ model: 'p-image', n });
			expect([refused.status, refused.body.error.param]).toEqual([400, 'n']);
		}
	});
});

describe('a failure after some of the n images', () => {
	let upstream: CountingUpstream;
	let server: InProcessServer;
	beforeAll(async () => {
		upstream = await startCountingUpstream(300);
		const { args, env } = upstream.serverOptions();
		server = await startInProcessServer({ args: ['--log-level', 'silent', ...args], env });
	});
	afterAll(async () => {
		await server.stop({ removeData: true });
		await upstream.close();
	});

	it('fails the whole generation: nothing answered, nothing charged, the images made removed', async () => {
		const headers = { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' };
		const pending = inject(server.app, '/v1/images/generations', { method: 'POST', headers, body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', n: 3 }) });
		// The first call is under way: the second is refused by the host.
		while (upstream.calls < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		upstream.failNext(1);
		const failed = await json(await pending);
		expect(failed.status).toBeGreaterThanOrEqual(400);
		expect(upstream.calls).toBe(2);
		const usage = await json(await inject(server.app, '/v1/usage', { headers }));
		expect(usage.body.total).toEqual({ images: 0, cost_usd: 0 });
		const jobs = await json(await inject(server.app, '/v1/generations', { headers }));
		expect(jobs.body.data[0]).toMatchObject({ status: 'failed', result: null });
		const { readdirSync } = await import('node:fs');
		const files = readdirSync(server.dataDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile() && /\.(png|jpe?g|webp)$/.test(entry.name));
		expect(files).toEqual([]);
	});
});

describe('size and the fields OpenAI clients send', () => {
	it('reads size as the nearest catalog ratio', async () => {
		const wide = await generate({ model: 'p-image', size: '1792x1024', response_format: 'b64_json' });
		expect(wide.status).toBe(200);
		const sharp = (await import('sharp')).default;
		const { width, height } = await sharp(Buffer.from(wide.body.data[0].b64_json, 'base64')).metadata();
		expect(width! / height!).toBeCloseTo(16 / 9, 1);
	});

	it('refuses size with aspect_ratio, and a size not WxH, naming size', async () => {
		for (const body of [{ size: '1024x1024', aspect_ratio: '1:1' }, { size: 'big' }]) {
			const refused = await generate({ model: 'p-image', ...body });
			expect([refused.status, refused.body.error.param]).toEqual([400, 'size']);
		}
	});

	it('accepts quality, style, user, background, moderation and output_compression, and refuses a wrong type naming it', async () => {
		const ignored = { quality: 'hd', style: 'natural', user: 'someone', background: 'auto', moderation: 'auto', output_compression: 90 };
		expect((await generate({ model: 'p-image', ...ignored })).status).toBe(200);
		const refused = await generate({ model: 'p-image', quality: 5 });
		expect([refused.status, refused.body.error.param]).toEqual([400, 'quality']);
		const unknown = await generate({ model: 'p-image', strength: 0.5 });
		expect([unknown.status, unknown.body.error.param, unknown.body.error.code]).toEqual([400, 'strength', 'unknown_field']);
	});
});

describe('--model-aliases', () => {
	it('generates with an alias, answering the model that drew the image', async () => {
		const answer = await generate({ model: 'dall-e-3', n: 1, size: '1024x1024' });
		expect(answer.status).toBe(200);
		expect(answer.body.model).toBe('p-image');
		expect(answer.body.data[0].url).toMatch(/^http/);
	});

	it('answers b64_json for a gpt-image alias when no response_format is sent, and a url when asked', async () => {
		const inline = await generate({ model: 'gpt-image-1' });
		expect(inline.status).toBe(200);
		expect(inline.body.data[0].b64_json).toEqual(expect.any(String));
		expect(inline.body.data[0]).not.toHaveProperty('url');
		const linked = await generate({ model: 'gpt-image-1', response_format: 'url' });
		expect(linked.body.data[0].url).toMatch(/^http/);
	});

	it('refuses a name that is neither a model nor an alias, naming model', async () => {
		const refused = await generate({ model: 'dall-e-4' });
		expect([refused.status, refused.body.error.param]).toEqual([400, 'model']);
	});

	it('lists the aliases in GET /v1/models with their model and the fields ignored', async () => {
		const models = await json(await service.request('/v1/models', { headers: service.auth }));
		expect(models.body.data.map((model: { id: string }) => model.id)).toEqual(['p-image', 'p-image-edit', 'textimage-v2', 'p-video', 'dall-e-3', 'gpt-image-1', 'dall-e-2']);
		const byId = Object.fromEntries(models.body.data.map((model: { id: string }) => [model.id, model]));
		expect(byId['dall-e-3']).toMatchObject({ alias_of: 'p-image', pricing: byId['p-image'].pricing, defaults: { response_format: 'url' } });
		expect(byId['gpt-image-1'].defaults.response_format).toBe('b64_json');
		expect(byId['p-image']).not.toHaveProperty('alias_of');
		for (const model of models.body.data.filter((entry: { type?: string }) => entry.type !== 'video')) {
			expect(model.ignored_fields).toEqual(['quality', 'style', 'user', 'background', 'moderation', 'output_compression']);
			expect(model.fields).toEqual(expect.arrayContaining(['n', 'size']));
		}
	});

	it('shows a key limited to some models only their aliases, and refuses the others', async () => {
		const key = (await admin('POST', '/v1/admin/keys', { name: 'ideogram only', models: ['textimage-v2'] })).body;
		const models = await json(await service.request('/v1/models', { headers: { authorization: `Bearer ${key.key}` } }));
		expect(models.body.data.map((model: { id: string }) => model.id)).toEqual(['textimage-v2', 'dall-e-2']);
		const refused = await generate({ model: 'dall-e-3' }, `Bearer ${key.key}`);
		expect([refused.status, refused.body.error.code]).toEqual([403, 'model_not_allowed']);
	});
});
