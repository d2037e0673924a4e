/**
 * The marks on a p-image-edit's inputs are carried on (docs/provenance.md): an input image that
 * comes with its own C2PA manifest becomes an ingredient of the output's manifest, as an input to
 * the model (`inputTo`), named by the `c2pa.created` action; an input without one adds nothing.
 * The signed input here is an image this service generated before.
 */
import sharp from 'sharp';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { actionsOf, activeManifest, ownTrustAnchor, readC2paManifest } from '../support/c2pa-reader';
import { postJson } from '../support/http';

let service: InProcessServer;
let signedInput: string;
let plainInput: string;

const dataUri = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`;

beforeAll(async () => {
	service = await startInProcessServer();
	const generated = await postJson(service, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', aspect_ratio: '1:1' });
	expect(generated.status).toBe(200);
	signedInput = dataUri(Buffer.from(generated.body.data[0].b64_json, 'base64'));
	plainInput = dataUri(await sharp({ create: { width: 640, height: 480, channels: 3, background: '#3a7' } }).png().toBuffer());
});
afterAll(() => service.stop({ removeData: true }));

async function editedManifest(images: string[]) {
	const answer = await postJson(service, '/v1/images/generations', { model: 'p-image-edit', prompt: 'the same, at night', images, response_format: 'b64_json', output_format: 'png' });
	expect(answer.status).toBe(200);
	return (await readC2paManifest(Buffer.from(answer.body.data[0].b64_json, 'base64'), 'image/png', ownTrustAnchor(service.dataDir)))!;
}

test('a signed input among plain ones is an ingredient of ours, validated, and the creation names it', async () => {
	const report = await editedManifest([plainInput, signedInput, plainInput]);
	expect(report.validation_state).toBe('Trusted');
	const [created] = actionsOf(report);
	// c2pa-rs turns the ids the definition names into hashed links to the ingredient assertions.
	expect(created).toMatchObject({ action: 'c2pa.created', parameters: { ingredients: [{ url: expect.stringMatching(/c2pa\.ingredient/) }] } });
	const ingredients = activeManifest(report).ingredients!;
	expect(ingredients).toHaveLength(1);
	expect(ingredients[0]).toMatchObject({ title: 'images[1].png', relationship: 'inputTo' });
	// The input's own manifest came along whole, and still validates inside ours.
	expect(Object.keys(report.manifests)).toHaveLength(2);
	expect(actionsOf({ ...report, active_manifest: ingredients[0]!.active_manifest })[0]).toMatchObject({ action: 'c2pa.created' });
	expect(ingredients[0]!.validation_results?.activeManifest?.failure ?? []).toEqual([]);
});

test('two signed inputs are two ingredients, in the order of images', async () => {
	const report = await editedManifest([signedInput, signedInput]);
	expect(actionsOf(report)[0].parameters.ingredients).toHaveLength(2);
	expect(activeManifest(report).ingredients!.map((ingredient) => ingredient.title)).toEqual(['images[0].png', 'images[1].png']);
});

test('inputs without a manifest: no ingredient, the creation names none', async () => {
	const report = await editedManifest([plainInput]);
	expect(report.validation_state).toBe('Trusted');
	expect(activeManifest(report).ingredients ?? []).toEqual([]);
	expect(actionsOf(report)[0]).toEqual(expect.not.objectContaining({ parameters: expect.anything() }));
	expect(Object.keys(report.manifests)).toHaveLength(1);
});
