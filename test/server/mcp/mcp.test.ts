/**
 * POST /mcp with the MCP SDK's own client over real HTTP against the built CLI: the tools and
 * their schemas from the catalog, each tool's happy path, bad arguments as `isError` results that
 * name the field, API-key auth, usage counted like /v1, no base64 in any result, and a managed
 * key's models and budget holding over MCP as over /v1.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { createManagedKey, download } from '../support/http';
import { makeImage } from '../support/media';

const ADMIN_KEY = 'admin-secret-0123456789';
let server: ServiceUnderTest;
let client: Client;

async function connect(apiKey: string): Promise<Client> {
	const mcp = new Client({ name: 'imagegen-test', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`), {
		requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
	});
	await mcp.connect(transport);
	return mcp;
}

type ToolAnswer = { structuredContent?: Record<string, any>; content: Array<{ type: string; text?: string }>; isError?: boolean };
const call = async (mcp: Client, name: string, args: Record<string, unknown> = {}) =>
	(await mcp.callTool({ name, arguments: args })) as ToolAnswer;

/** Every result carries its structured answer as the text too, and no image bytes. */
function expectCompact(result: ToolAnswer): Record<string, any> {
	expect(result.content).toHaveLength(1);
	expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
	const text = JSON.stringify(result);
	// Neither an inline image field nor the start of PNG, JPEG or WebP bytes in base64.
	expect(text).not.toMatch(/b64_json\\?"\s*:|base64,|iVBORw0KGgo|\/9j\/4|UklGR/);
	return result.structuredContent!;
}

async function usage(apiKey: string): Promise<{ images: number; cost_usd: number }> {
	const response = await fetch(`${server.baseUrl}/usage`, { headers: { authorization: `Bearer ${apiKey}` } });
	return ((await response.json()) as any).total;
}

beforeAll(async () => {
	server = await startInProcessServer({ args: ['--allow-private-urls', '--admin-key', ADMIN_KEY] });
	client = await connect(server.apiKey);
}, 60_000);
afterAll(async () => {
	await client?.close();
	await server?.stop({ removeData: true });
});

describe('MCP endpoint', () => {
	it('lists the nine tools with input schemas from the catalog', async () => {
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name).sort()).toEqual(['cancel_generation', 'delete_file', 'generate_image', 'generate_video', 'get_file', 'get_generation', 'list_models', 'upload_file', 'verify_image']);
		const generate = tools.find((tool) => tool.name === 'generate_image')!;
		const properties = generate.inputSchema.properties as Record<string, any>;
		expect(properties.model.enum).toEqual(['p-image', 'p-image-edit', 'textimage-v2']);
		expect(generate.inputSchema.required).toEqual(['model', 'prompt']);
		expect(properties.response_format).toBeUndefined();
		for (const field of ['n', 'size', 'quality', 'style', 'user', 'background', 'moderation', 'output_compression']) expect(properties[field]).toBeUndefined();
		expect(properties.prompt.maxLength).toBe(10_000);
		expect(properties.aspect_ratio.enum).toContain('16:10');
		expect(properties.aspect_ratio.description).toMatch(/p-image: 1:1, 16:9.*textimage-v2: .*3:1/);
		expect(properties.negative_prompt.description).toMatch(/Only for textimage-v2/);
		expect(properties.images.description).toMatch(/Only for p-image-edit/);
		expect(properties.style_type.enum).toEqual(['AUTO', 'GENERAL', 'REALISTIC', 'DESIGN', 'RENDER_3D', 'ANIME']);
		expect(properties.seed).toMatchObject({ type: 'integer', minimum: 0, maximum: 2_147_483_647 });
		const upload = tools.find((tool) => tool.name === 'upload_file')!;
		expect(Object.keys(upload.inputSchema.properties!).sort()).toEqual(['expires_in', 'file', 'max_bytes', 'max_side', 'output_format']);
	});

	it('generate_image answers the hosted URL, seed, model, MIME type and cost, and counts in /v1/usage', async () => {
		const before = await usage(server.apiKey);
		const result = await call(client, 'generate_image', { model: 'textimage-v2', prompt: 'a red fox', aspect_ratio: '16:9', output_format: 'webp', seed: 42, style_type: 'ANIME' });
		expect(result.isError).toBeFalsy();
		const answer = expectCompact(result);
		expect(answer).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/files\/[\w-]+\.webp$/), expires_at: expect.any(String), seed: 42, model: 'textimage-v2', mime_type: 'image/webp', cost_usd: 0.08 });
		const image = await fetch(answer.url);
		expect(image.status).toBe(200);
		expect(image.headers.get('content-type')).toBe('image/webp');
		const after = await usage(server.apiKey);
		expect(after.images).toBe(before.images + 1);
		expect(after.cost_usd).toBeCloseTo(before.cost_usd + 0.08, 6);
	});

	it('upload_file, get_file and delete_file work on the calling key\'s files', async () => {
		const png = (await makeImage('png', 300, 200)).toString('base64');
		const uploaded = expectCompact(await call(client, 'upload_file', { file: png, output_format: 'webp', max_side: 150, expires_in: 600 }));
		expect(uploaded).toEqual({ id: expect.any(String), url: expect.stringMatching(/\.webp$/), media_type: 'image', mime_type: 'image/webp', size_bytes: expect.any(Number), expires_at: expect.any(String) });
		expect(Date.parse(uploaded.expires_at) - Date.now()).toBeLessThanOrEqual(600_000);
		const info = expectCompact(await call(client, 'get_file', { id: uploaded.id }));
		expect(info).toEqual(uploaded);
		// Another key does not see it.
		const other = await connect((await createManagedKey(server, ADMIN_KEY, { name: 'other' })).key);
		expect((await call(other, 'get_file', { id: uploaded.id })).isError).toBe(true);
		await other.close();
		expect(expectCompact(await call(client, 'delete_file', { id: uploaded.id }))).toEqual({ id: uploaded.id, deleted: true });
		expect((await fetch(uploaded.url)).status).toBe(404);
		const gone = await call(client, 'get_file', { id: uploaded.id });
		expect(gone.isError).toBe(true);
		expect(gone.structuredContent!.error).toMatchObject({ param: 'id', code: 'file_not_found', status: 404 });
	});

	it('get_generation answers a generation of the key, inline images as URLs; cancel_generation answers a finished one as it ended', async () => {
		const inline = await fetch(`${server.baseUrl}/images/generations`, {
			method: 'POST',
			// Kept for its job only with an Idempotency-Key (or a webhook_url).
			headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'mcp-kite-8' },
			body: JSON.stringify({ model: 'p-image', prompt: 'a kite', seed: 8, response_format: 'b64_json' }),
		});
		expect(inline.status).toBe(200);
		const listed = (await (await fetch(`${server.baseUrl}/generations?limit=1`, { headers: { authorization: `Bearer ${server.apiKey}` } })).json()) as any;
		const { id } = listed.data[0];
		const generation = expectCompact(await call(client, 'get_generation', { id }));
		expect(generation).toMatchObject({ object: 'generation', id, status: 'succeeded', error: null, result: { model: 'p-image', data: [{ seed: 8, url: expect.stringMatching(/\/files\//) }] } });
		expect((await download(generation.result.data[0].url)).status).toBe(200);
		expect(expectCompact(await call(client, 'cancel_generation', { id }))).toEqual(generation);
		for (const tool of ['get_generation', 'cancel_generation']) {
			for (const missing of [`gen_${'0'.repeat(32)}`, 'not-a-generation']) {
				const refused = await call(client, tool, { id: missing });
				expect(refused.isError).toBe(true);
				expect(refused.structuredContent!.error).toMatchObject({ param: 'id', code: 'generation_not_found', status: 404 });
			}
		}
	});

	it('list_models answers the catalog as /v1/models does', async () => {
		const answer = expectCompact(await call(client, 'list_models'));
		const rest = await (await fetch(`${server.baseUrl}/models`, { headers: { authorization: `Bearer ${server.apiKey}` } })).json();
		expect(answer).toEqual(rest);
	});

	it.each<[string, Record<string, unknown>, string]>([
		['generate_image', { prompt: 'x' }, 'model'],
		['generate_image', { model: 'p-image', prompt: '   ' }, 'prompt'],
		['generate_image', { model: 'p-image', prompt: 'x', negative_prompt: 'y' }, 'negative_prompt'],
		['generate_image', { model: 'p-image', prompt: 'x', aspect_ratio: '3:1' }, 'aspect_ratio'],
		['generate_image', { model: 'p-image-edit', prompt: 'x' }, 'images'],
		['generate_image', { model: 'p-image', prompt: 'x', seed: 1.5 }, 'seed'],
		['generate_image', { model: 'p-image', prompt: 'x', response_format: 'b64_json' }, 'response_format'],
		['generate_image', { model: 'p-image', prompt: 'x', n: 2 }, 'n'],
		['generate_image', { model: 'p-image', prompt: 'x', size: '1024x1024' }, 'size'],
		['upload_file', {}, 'file'],
		['upload_file', { file: 'bm90IGFuIGltYWdl' }, 'file'],
		['upload_file', { file: 'https://127.0.0.1:1/x.png', max_side: 3 }, 'max_side'],
		['upload_file', { file: 'iVBORw0KGgo=', output_format: 'bmp' }, 'output_format'],
		['get_file', {}, 'id'],
		['delete_file', { id: 'no-such-file-0123456789' }, 'id'],
		['get_generation', {}, 'id'],
		['cancel_generation', { id: 'gen_x', extra: 1 }, 'extra'],
	])('%s with %j is an isError result naming %s', async (tool, args, param) => {
		const before = await usage(server.apiKey);
		const result = await call(client, tool, args);
		expect(result.isError).toBe(true);
		expect(result.structuredContent!.error.param).toBe(param);
		expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
		expect(await usage(server.apiKey)).toEqual(before);
	});

	it('refuses a missing or wrong key with 401 before any MCP message is handled', async () => {
		await expect(connect('wrong-key-0123456789')).rejects.toThrow(/Invalid API key/);
		const bare = await fetch(`${server.origin}/mcp`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
			body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
		});
		expect(bare.status).toBe(401);
		expect(((await bare.json()) as any).error.type).toBe('authentication_error');
	});

	it('answers 405 to GET and DELETE: the endpoint is stateless', async () => {
		for (const method of ['GET', 'DELETE']) {
			const response = await fetch(`${server.origin}/mcp`, { method, headers: { authorization: `Bearer ${server.apiKey}` } });
			expect(response.status).toBe(405);
			expect(response.headers.get('allow')).toBe('POST');
		}
	});
});

describe('managed keys over MCP', () => {
	const createKey = async (fields: Record<string, unknown>) => (await createManagedKey(server, ADMIN_KEY, { name: 'mcp', ...fields })).key;

	it('a key limited to some models is offered only those and refused the others, naming model', async () => {
		const mcp = await connect(await createKey({ models: ['p-image'] }));
		const { tools } = await mcp.listTools();
		const properties = tools.find((tool) => tool.name === 'generate_image')!.inputSchema.properties as Record<string, any>;
		expect(properties.model.enum).toEqual(['p-image']);
		expect((expectCompact(await call(mcp, 'list_models')) as any).data.map((model: any) => model.id)).toEqual(['p-image']);
		const refused = await call(mcp, 'generate_image', { model: 'textimage-v2', prompt: 'a cat' });
		expect(refused.isError).toBe(true);
		expect(refused.structuredContent!.error).toMatchObject({ param: 'model', status: 403 });
		expect((await call(mcp, 'generate_image', { model: 'p-image', prompt: 'a cat' })).isError).toBeFalsy();
		await mcp.close();
	});

	it('a budget holds: the call past it is refused as 402, costs nothing and is counted in the metrics', async () => {
		const refusals = async () => {
			const metrics = await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
			expect(metrics.status).toBe(200);
			return Number(/^imagegen_budget_refusals_total (\S+)$/m.exec(await metrics.text())?.[1]);
		};
		const before = await refusals();
		const secret = await createKey({ budget_usd: 0.007 });
		const mcp = await connect(secret);
		for (let i = 0; i < 2; i++) expect((await call(mcp, 'generate_image', { model: 'p-image', prompt: `a dog ${i}` })).isError).toBeFalsy();
		const refused = await call(mcp, 'generate_image', { model: 'p-image', prompt: 'one more' });
		expect(refused.isError).toBe(true);
		expect(refused.structuredContent!.error).toMatchObject({ status: 402, type: 'billing_error' });
		expect(await usage(secret)).toEqual({ images: 2, cost_usd: 0.007 });
		expect(await refusals()).toBe(before + 1);
		await mcp.close();
	});

	it('a JSON-RPC batch is refused whole (-32600, HTTP 400): a key limited to 2 a minute never gets 10 generations from one request', async () => {
		const secret = await createKey({ rate_limit_per_minute: 2 });
		const calls = Array.from({ length: 10 }, (_, index) => ({
			jsonrpc: '2.0',
			id: index + 1,
			method: 'tools/call',
			params: { name: 'generate_image', arguments: { model: 'p-image', prompt: `batch ${index}` } },
		}));
		const response = await fetch(`${server.origin}/mcp`, {
			method: 'POST',
			headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
			body: JSON.stringify(calls),
		});
		expect(response.status).toBe(400);
		const body = (await response.json()) as any;
		expect(body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/batch/i) } });
		expect(await usage(secret)).toEqual({ images: 0, cost_usd: 0 });
	});
});

describe('rate limit over MCP', () => {
	it('every MCP message counts against the key\'s limit together with /v1 calls', async () => {
		const limited = await startInProcessServer({ args: ['--rate-limit-per-minute', '5'] });
		try {
			const mcp = new Client({ name: 'imagegen-test', version: '1.0.0' });
			await mcp.connect(new StreamableHTTPClientTransport(new URL(`${limited.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${limited.apiKey}` } } }));
			// Connecting took some of the 5 (initialize, its notification, the client's GET probe).
			let answered = 0;
			await expect(
				(async () => {
					for (;;) {
						await mcp.callTool({ name: 'list_models', arguments: {} });
						answered++;
					}
				})(),
			).rejects.toThrow(/Rate limit of 5 requests/);
			expect(answered).toBeGreaterThan(0);
			expect(answered).toBeLessThanOrEqual(3);
			// The same bucket: /v1 is refused now too.
			const rest = await fetch(`${limited.baseUrl}/models`, { headers: { authorization: `Bearer ${limited.apiKey}` } });
			expect(rest.status).toBe(429);
			expect(rest.headers.get('retry-after')).toMatch(/^\d+$/);
			await mcp.close();
		} finally {
			await limited.stop({ removeData: true });
		}
	});
});
