/**
 * MCP's `generate_video`: answers the job at once; `get_generation` follows it to its MP4; a key
 * limited to image models is not offered the tool.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { createManagedKey, eventually } from '../support/http';

const ADMIN_KEY = 'admin-key-for-video-tool-tests-0123456789';
let server: InProcessServer;
beforeAll(async () => {
	server = await startInProcessServer({ args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY] });
});
afterAll(() => server.stop({ removeData: true }));

async function connect(apiKey: string): Promise<Client> {
	const mcp = new Client({ name: 'imagegen-test', version: '1.0.0' });
	await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
	return mcp;
}

const textOf = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]!.text) as Record<string, any>;

test('generate_video answers the job; get_generation follows it to the hosted MP4', async () => {
	const mcp = await connect(server.apiKey);
	try {
		const started = textOf(await mcp.callTool({ name: 'generate_video', arguments: { model: 'p-video', prompt: 'waves on a shore', seconds: 1 } }));
		expect(started).toMatchObject({ object: 'video', status: 'in_progress', seconds: '1' });
		let generation: Record<string, any> = {};
		expect(
			await eventually(async () => {
				generation = textOf(await mcp.callTool({ name: 'get_generation', arguments: { id: started.id } }));
				return generation.status === 'succeeded';
			}, 30_000),
		).toBe(true);
		expect(generation.result).toMatchObject({ object: 'video.result', seconds: 1, usage: { seconds: 1, cost_usd: 0.02 } });
		const mp4 = await fetch(generation.result.video.url);
		expect(mp4.headers.get('content-type')).toBe('video/mp4');
		const refused = textOf(await mcp.callTool({ name: 'generate_video', arguments: { model: 'p-video', prompt: 'x', fps: 30 } }));
		expect(refused.error).toMatchObject({ param: 'fps', status: 400 });
	} finally {
		await mcp.close();
	}
});

test('a key limited to image models is offered no generate_video', async () => {
	const { key } = await createManagedKey(server, ADMIN_KEY, { name: 'images only', models: ['p-image'] });
	const mcp = await connect(key);
	try {
		const { tools } = await mcp.listTools();
		expect(tools.map((tool) => tool.name)).toContain('generate_image');
		expect(tools.map((tool) => tool.name)).not.toContain('generate_video');
	} finally {
		await mcp.close();
	}
});
