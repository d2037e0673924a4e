/**
 * Every generated image carries both marks (docs/provenance.md), checked by readers nobody
 * here wrote: ExifTool reads the XMP, c2pa-rs validates the C2PA manifest (claim, signature,
 * actions, hash binding) against the certificate the service made and kept in its data dir.
 */
import { readFileSync, statSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { join } from 'node:path';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { actionsOf, readC2paManifest } from '../support/c2pa-reader';
import { exiftool } from '../support/exiftool';
import { call, postJson } from '../support/http';

const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const VERSION = (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'server', 'package.json'), 'utf8')) as { version: string }).version;
const MIME = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;

let server: InProcessServer;
let trustAnchor: string;

beforeAll(async () => {
	server = await startInProcessServer();
	const chain = readFileSync(join(server.dataDir, 'c2pa', 'signer-chain.pem'), 'utf8');
	trustAnchor = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.at(-1)!;
});
afterAll(() => server.stop({ removeData: true }));

async function generatedBytes(body: Record<string, unknown>): Promise<{ bytes: Buffer; item: any }> {
	const answer = await postJson(server, '/v1/images/generations', body);
	expect(answer.status).toBe(200);
	const [item] = answer.body.data;
	if (item.b64_json) return { bytes: Buffer.from(item.b64_json, 'base64'), item };
	return { bytes: Buffer.from(await (await fetch(item.url)).arrayBuffer()), item };
}

describe('generated images', () => {
	it.each([
		['p-image', 'png', 'url'],
		['textimage-v2', 'jpeg', 'url'],
		['p-image', 'webp', 'b64_json'],
		['textimage-v2', 'png', 'b64_json'],
	] as const)('%s as %s (%s) carries IPTC XMP and a C2PA manifest that validates as trusted', async (model, format, responseFormat) => {
		const { bytes, item } = await generatedBytes({ model, prompt: 'a secret lighthouse plan', output_format: format, response_format: responseFormat });
		expect(item.provenance).toEqual({ c2pa: 'signed', digital_source_type: TRAINED });

		const tags = await exiftool(bytes);
		expect(tags['XMP-iptcExt:DigitalSourceType']).toBe(TRAINED);
		expect(tags['XMP-xmp:CreatorTool']).toBe(`imagegen-server ${VERSION}`);
		expect(tags['XMP-iptcExt:AISystemUsed']).toBe(model);
		expect(tags['XMP-xmp:CreateDate']).toBeDefined();
		expect(JSON.stringify(tags)).not.toContain('secret lighthouse');

		const report = await readC2paManifest(bytes, MIME[format], trustAnchor);
		expect(report?.validation_status ?? []).toEqual([]);
		expect(report!.validation_state).toBe('Trusted');
		expect(actionsOf(report!)[0]).toMatchObject({ action: 'c2pa.created', digitalSourceType: TRAINED, softwareAgent: { name: model } });
	});

	it('hosted ones say so in GET /v1/files/<id> too', async () => {
		const { item } = await generatedBytes({ model: 'p-image', prompt: 'a lighthouse' });
		const id = /files\/([^.]+)\./.exec(item.url)![1];
		const info = await call(server, `/v1/files/${id}`);
		expect(info.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: TRAINED });
	});

	it('through MCP, and in an idempotent replay, the images are marked too', async () => {
		const mcp = new Client({ name: 'provenance-test', version: '1.0.0' });
		await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${server.apiKey}` } } }));
		try {
			const result = await mcp.callTool({ name: 'generate_image', arguments: { model: 'p-image', prompt: 'a lighthouse', output_format: 'webp' } });
			const { url } = result.structuredContent as { url: string };
			const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
			expect((await exiftool(bytes))['XMP-iptcExt:DigitalSourceType']).toBe(TRAINED);
			expect((await readC2paManifest(bytes, 'image/webp', trustAnchor))!.validation_state).toBe('Trusted');
		} finally {
			await mcp.close();
		}

		const body = { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' };
		const headers = { 'idempotency-key': 'provenance-replay-0001' };
		const first = await postJson(server, '/v1/images/generations', body, { headers });
		const replay = await postJson(server, '/v1/images/generations', body, { headers });
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect(replay.body.data[0]).toEqual(first.body.data[0]);
		const replayed = Buffer.from(replay.body.data[0].b64_json, 'base64');
		expect((await readC2paManifest(replayed, 'image/png', trustAnchor))!.validation_state).toBe('Trusted');
	});

	it('the self-made certificate is kept in the data dir, key readable by the owner only, and named at start', () => {
		expect(statSync(join(server.dataDir, 'c2pa', 'signer-key.pem')).mode & 0o777).toBe(0o600);
		expect(server.app.provenance.startLine).toMatch(/C2PA signer: imagegen-server content credentials, self-made \(made and kept in .*c2pa/);
	});
});

describe('--provenance-include-prompt', () => {
	let withPrompt: ServiceUnderTest;
	beforeAll(async () => (withPrompt = await startInProcessServer({ args: ['--provenance-include-prompt'] })));
	afterAll(() => withPrompt.stop({ removeData: true }));

	it('writes the prompt into the XMP', async () => {
		const answer = await postJson(withPrompt, '/v1/images/generations', { model: 'p-image', prompt: 'a "quoted" <lighthouse> & sea', response_format: 'b64_json' });
		const tags = await exiftool(Buffer.from(answer.body.data[0].b64_json, 'base64'));
		expect(tags['XMP-iptcExt:AIPromptInformation']).toBe('a "quoted" <lighthouse> & sea');
	});
});

describe('--provenance off', () => {
	let unmarked: InProcessServer;
	beforeAll(async () => (unmarked = await startInProcessServer({ env: { IMAGEGEN_PROVENANCE: 'off' } })));
	afterAll(() => unmarked.stop({ removeData: true }));

	it('writes no marks and says so', async () => {
		const answer = await postJson(unmarked, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' });
		const item = answer.body.data[0];
		expect(item.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
		const bytes = Buffer.from(item.b64_json, 'base64');
		expect((await exiftool(bytes))['XMP-iptcExt:DigitalSourceType']).toBeUndefined();
		expect(await readC2paManifest(bytes, 'image/png')).toBeNull();
		expect(unmarked.app.provenance.startLine).toContain('provenance: off');
	});
});
