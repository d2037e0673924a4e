/**
 * A provider's image that comes with its own C2PA manifest keeps it: it becomes the parent
 * ingredient of ours, and a re-encode we did is recorded (c2pa.converted, c2pa.resized). The
 * provider here is a Replicate stand-in whose output is an image another service signed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { startMediaHost, type MediaHost } from '../support/media-host';
import { actionsOf, activeManifest, readC2paManifest } from '../support/c2pa-reader';
import { postJson } from '../support/http';

let provider: ServiceUnderTest;
let gateway: ServiceUnderTest;
let fake: FakeHosts;
let media: MediaHost;
let bothRoots: string;

const rootOf = (server: ServiceUnderTest) =>
	readFileSync(join(server.dataDir, 'c2pa', 'signer-chain.pem'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.at(-1)!;

beforeAll(async () => {
	[fake, media, provider] = await Promise.all([startFakeHosts(), startMediaHost(), startInProcessServer()]);
	gateway = await startInProcessServer({
		args: ['--allow-private-urls', '--providers', 'p-image=replicate'],
		env: { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
	});
	const signed = await postJson(provider, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', aspect_ratio: '1:1' });
	const url = media.put('/signed.png', Buffer.from(signed.body.data[0].b64_json, 'base64'));
	fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r1', status: 'succeeded', output: [url], urls: {} } }, 10);
	bothRoots = `${rootOf(provider)}\n${rootOf(gateway)}`;
});
afterAll(async () => {
	await Promise.all([provider.stop({ removeData: true }), gateway.stop({ removeData: true }), fake.close(), media.close()]);
});

async function generateThroughGateway(request: Record<string, unknown>, mimeType: string) {
	const answer = await postJson(gateway, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', ...request });
	expect(answer.status).toBe(200);
	expect(answer.body.data[0].provenance.c2pa).toBe('signed');
	return (await readC2paManifest(Buffer.from(answer.body.data[0].b64_json, 'base64'), mimeType, bothRoots))!;
}

test('an image that already fits: the provider’s manifest is the parent ingredient, opened, re-encoded only to carry the watermark', async () => {
	const report = await generateThroughGateway({ aspect_ratio: '1:1', output_format: 'png' }, 'image/png');
	expect(report.validation_state).toBe('Trusted');
	expect(actionsOf(report).map((action) => action.action)).toEqual(['c2pa.opened', 'c2pa.watermarked']);
	const [ingredient] = activeManifest(report).ingredients!;
	expect(ingredient).toMatchObject({ relationship: 'parentOf' });
	expect(Object.keys(report.manifests)).toHaveLength(2);
	expect(actionsOf({ ...report, active_manifest: ingredient.active_manifest })[0]).toMatchObject({ action: 'c2pa.created' });
});

test('an image we convert and resize: both recorded with the watermark, the provider’s manifest still the parent', async () => {
	const report = await generateThroughGateway({ aspect_ratio: '16:9', output_format: 'jpeg' }, 'image/jpeg');
	expect(report.validation_state).toBe('Trusted');
	expect(actionsOf(report).map((action) => action.action)).toEqual(['c2pa.opened', 'c2pa.converted', 'c2pa.resized', 'c2pa.watermarked']);
	expect(activeManifest(report).ingredients![0]).toMatchObject({ relationship: 'parentOf' });
});
