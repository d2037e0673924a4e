/**
 * Every generated image carries the invisible watermark beside its C2PA manifest (docs/provenance.md,
 * "Watermark"): found in the image as answered, as a URL or inline, in each output format and from
 * each marking thread; the manifest records it as a `c2pa.soft-binding` naming the algorithm and the
 * payload the pixels carry, and still validates with c2pa-rs; the payload names the generation's
 * provenance record, which POST /v1/provenance/verify finds; `--provenance off` marks nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WATERMARK_ALGORITHM } from '../../../server/src/provenance/watermark/detect';
import { detectWatermarkInImage } from '../../../server/src/provenance/watermark/encoded-image';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { actionsOf, readC2paManifest } from '../support/c2pa-reader';
import { postJson } from '../support/http';

jest.setTimeout(60_000);

const MIME = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;
const servers: InProcessServer[] = [];

afterAll(async () => {
	for (const server of servers) await server.stop({ removeData: true });
});

async function start(args: string[] = []): Promise<InProcessServer> {
	const server = await startInProcessServer({ args: ['--log-level', 'silent', ...args] });
	servers.push(server);
	return server;
}

async function generated(server: InProcessServer, body: Record<string, unknown>): Promise<Buffer> {
	const answer = await postJson(server, '/v1/images/generations', body);
	expect(answer.status).toBe(200);
	const [item] = answer.body.data;
	return item.b64_json ? Buffer.from(item.b64_json, 'base64') : Buffer.from(await (await fetch(item.url)).arrayBuffer());
}

describe.each([
	['the event loop', ['--marking-threads', '0']],
	['the marking pool', []],
] as const)('marked on %s', (_thread, args) => {
	let server: InProcessServer;
	let trustAnchor: string;
	beforeAll(async () => {
		server = await start([...args]);
		const chain = readFileSync(join(server.dataDir, 'c2pa', 'signer-chain.pem'), 'utf8');
		trustAnchor = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.at(-1)!;
	});

	it.each([
		['p-image', 'png', 'url', '16:9'],
		['textimage-v2', 'jpeg', 'url', '1:1'],
		['p-image', 'webp', 'b64_json', '9:16'],
	] as const)('%s as %s (%s, %s): the pixels carry the payload the manifest binds', async (model, format, responseFormat, ratio) => {
		const bytes = await generated(server, { model, prompt: 'a harbour at dawn', output_format: format, response_format: responseFormat, aspect_ratio: ratio });
		const reading = await detectWatermarkInImage(bytes);
		expect(reading.found).toBe(true);
		const payload = Buffer.from((reading as { payload: Uint8Array }).payload);

		const report = await readC2paManifest(bytes, MIME[format], trustAnchor);
		expect(report?.validation_status ?? []).toEqual([]);
		expect(report!.validation_state).toBe('Trusted');
		const manifest = report!.manifests[report!.active_manifest!]!;
		const binding = manifest.assertions.find((assertion) => assertion.label === 'c2pa.soft-binding');
		expect(binding?.data).toMatchObject({ alg: WATERMARK_ALGORITHM, blocks: [{ scope: {}, value: payload.toString('base64') }] });
		expect(actionsOf(report!).map((action: { action: string }) => action.action)).toContain('c2pa.watermarked');

		// The payload names this generation's record: the key that made it is told which, another key is not.
		const verified = await postJson(server, '/v1/provenance/verify', { image: bytes.toString('base64') });
		expect(verified.status).toBe(200);
		expect(verified.body.watermark).toMatchObject({ found: true, algorithm: WATERMARK_ALGORITHM, payload: payload.toString('hex') });
		expect(verified.body.generation).toMatchObject({ id: expect.stringMatching(/^gen_[0-9a-f]{32}$/), model });
	});

	it('two images of one request carry two payloads', async () => {
		const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'twins', n: 2, response_format: 'b64_json' });
		const payloads = await Promise.all(
			answer.body.data.map(async (item: { b64_json: string }) => {
				const reading = await detectWatermarkInImage(Buffer.from(item.b64_json, 'base64'));
				return reading.found ? Buffer.from(reading.payload).toString('hex') : 'none';
			}),
		);
		expect(payloads).not.toContain('none');
		expect(new Set(payloads).size).toBe(2);
	});
});

it('--provenance off marks nothing: no watermark, no manifest', async () => {
	const server = await start(['--provenance', 'off']);
	const bytes = await generated(server, { model: 'p-image', prompt: 'a harbour at dawn', response_format: 'b64_json' });
	expect(await detectWatermarkInImage(bytes)).toMatchObject({ found: false });
	expect(await readC2paManifest(bytes, 'image/png')).toBeNull();
});
