/**
 * The MCP tool `verify_image`, with the MCP SDK's own client over real HTTP: an image with a real
 * watermark (its payload a record the store keeps) names its generation to the key that made it
 * only, an unmarked one carries nothing, an image the service generated shows its signed manifest,
 * and a bad argument is an `isError` result naming the field.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { TEST_API_KEY } from '../../helpers/server';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { download, postJson, uploadFile } from '../support/http';
import { markedImage, unmarkedImage, writeRecord } from '../provenance/support/marked-images';

const OTHER_KEY = 'other-key-0123456789abcdef';
let server: InProcessServer;
const clients: Client[] = [];

async function connect(apiKey: string): Promise<Client> {
	const mcp = new Client({ name: 'imagegen-test', version: '1.0.0' });
	await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } }));
	clients.push(mcp);
	return mcp;
}

type ToolAnswer = { structuredContent?: Record<string, any>; content: Array<{ type: string; text?: string }>; isError?: boolean };
const verify = async (mcp: Client, args: Record<string, unknown>) => (await mcp.callTool({ name: 'verify_image', arguments: args })) as ToolAnswer;

/** The structured answer, the same as the text, and never image bytes. */
function answerOf(result: ToolAnswer): Record<string, any> {
	expect(result.content).toHaveLength(1);
	expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent);
	expect(JSON.stringify(result)).not.toMatch(/base64,|iVBORw0KGgo|\/9j\/4/);
	return result.structuredContent!;
}

beforeAll(async () => {
	server = await startInProcessServer({ apiKey: `${TEST_API_KEY},${OTHER_KEY}`, args: ['--log-level', 'silent'] });
});
afterAll(async () => {
	await Promise.all(clients.map((mcp) => mcp.close()));
	await server.stop({ removeData: true });
});

test('is listed, read-only, with one argument: image', async () => {
	const { tools } = await (await connect(TEST_API_KEY)).listTools();
	const tool = tools.find((candidate) => candidate.name === 'verify_image')!;
	expect(tool.inputSchema).toMatchObject({ type: 'object', required: ['image'], additionalProperties: false });
	expect(Object.keys(tool.inputSchema.properties!)).toEqual(['image']);
	expect(tool.annotations).toMatchObject({ readOnlyHint: true });
});

test('a watermarked image names its generation to the key that made it, and only to it', async () => {
	const record = await writeRecord(server.app.provenanceRecords, apiKeyIdOf(TEST_API_KEY), { model: 'textimage-v2' });
	const image = `data:image/jpeg;base64,${(await markedImage(record.payload, 'jpeg')).toString('base64')}`;
	const mine = answerOf(await verify(await connect(TEST_API_KEY), { image }));
	expect(mine).toEqual({
		c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
		watermark: { found: true, algorithm: 'imagegen.dct-spread-spectrum.1', payload: Buffer.from(record.payload).toString('hex') },
		generation: { id: record.generationId, model: 'textimage-v2', created_at: record.createdAt.toISOString() },
	});
	const theirs = answerOf(await verify(await connect(OTHER_KEY), { image }));
	expect(theirs).toEqual({ ...mine, generation: null });
});

test('an image nobody marked carries nothing; a hosted URL is read from storage', async () => {
	const uploaded = await uploadFile({ origin: server.origin, apiKey: TEST_API_KEY }, await unmarkedImage('png'), {}, { mimeType: 'image/png' });
	const answer = answerOf(await verify(await connect(TEST_API_KEY), { image: uploaded.body.imageUrl }));
	expect(answer).toMatchObject({ watermark: { found: false, algorithm: null, payload: null }, generation: null });
});

test('an image the service generated shows its signed C2PA manifest', async () => {
	const generated = await postJson({ origin: server.origin, apiKey: TEST_API_KEY }, '/v1/images/generations', { model: 'p-image', prompt: 'a lantern in fog', output_format: 'jpeg' });
	const { bytes } = await download(generated.body.data[0].url);
	const answer = answerOf(await verify(await connect(TEST_API_KEY), { image: bytes.toString('base64') }));
	expect(answer.c2pa).toEqual({ present: true, valid: true, signer: 'imagegen-server content credentials', digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia' });
});

test.each([
	['not an image', { image: Buffer.from('plain words').toString('base64') }, 'image'],
	['no image', {}, 'image'],
	['a number', { image: 7 }, 'image'],
	['another argument', { image: 'aGVsbG8=', output_format: 'png' }, 'output_format'],
])('%s: an isError result naming the field', async (_case, args, param) => {
	const result = await verify(await connect(TEST_API_KEY), args);
	expect(result.isError).toBe(true);
	expect(result.structuredContent).toMatchObject({ error: { status: 400, param } });
});
