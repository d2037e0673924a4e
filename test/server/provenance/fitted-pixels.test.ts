/**
 * A generated image the fit changed reaches the marking as pixels (generation/normalize-output.ts),
 * and the marker encodes them once, in the image's format, with the watermark in them
 * (server/src/provenance/watermark-image.ts): the mark is found, the manifest validates and records
 * the fit and the watermark, the provider's image is its source, and the pixels are given back at
 * once. Unmarked (`--provenance off`), pixels are encoded as they are.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { MEDIA_DETAILS, sniffMedia } from '../../../core/media';
import { CoseSigner } from '../../../server/src/provenance/cose-signer';
import { C2paProvenanceMarker, UNMARKED } from '../../../server/src/provenance/provenance-marker';
import { newProvenancePayload } from '../../../server/src/provenance/provenance-records';
import { loadSigningCredentials, type SigningCredentials } from '../../../server/src/provenance/signing-credentials';
import { detectWatermarkInImage } from '../../../server/src/provenance/watermark/encoded-image';
import type { RawImage } from '../../../server/src/provenance/watermark/raw-image';
import { actionsOf, readC2paManifest } from '../support/c2pa-reader';
import { unmarkedImage } from './support/marked-images';

jest.setTimeout(30_000);

let dir: string;
let credentials: SigningCredentials;
let provided: Buffer;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-fitted-pixels-'));
	credentials = await loadSigningCredentials({ dataDir: dir, organization: 'imagegen-server tests' });
	provided = await unmarkedImage('png', 640, 480);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The provider's picture fitted to 720 × 720, as the fit answers it. */
async function fittedPixels(): Promise<RawImage> {
	const { data, info } = await sharp(provided).resize(720, 720, { fit: 'cover' }).raw().toBuffer({ resolveWithObject: true });
	return { data, info: { width: info.width, height: info.height, channels: info.channels } };
}

const marker = () => new C2paProvenanceMarker({ signer: new CoseSigner(credentials.key, credentials.chain), includePrompt: false, creatorTool: 'imagegen-server 0.0.0-test' });

it.each(['png', 'jpeg', 'webp'] as const)('as %s: encoded once with the watermark in them, the manifest recording the fit and the mark', async (format) => {
	const pixels = await fittedPixels();
	const payload = newProvenancePayload();
	const marked = await marker().markGenerated({
		pixels,
		media: MEDIA_DETAILS[format],
		model: 'p-image',
		prompt: 'a harbour at dawn',
		source: { bytes: provided, media: sniffMedia(provided)!, changes: ['resized'] },
		watermark: payload,
	});
	// The pixels were the marking's: given back once encoded.
	expect(pixels.data.byteLength).toBe(0);
	expect(await sharp(marked.bytes).metadata()).toMatchObject({ format, width: 720, height: 720 });
	const reading = await detectWatermarkInImage(marked.bytes);
	expect(reading.found && Buffer.from(reading.payload).equals(Buffer.from(payload))).toBe(true);
	expect(marked.watermark).toBe(payload);

	const report = await readC2paManifest(marked.bytes, MEDIA_DETAILS[format].mimeType);
	expect(report?.validation_state).toBe('Valid');
	expect(actionsOf(report!).map((action: { action: string }) => action.action)).toEqual(['c2pa.created', 'c2pa.resized', 'c2pa.watermarked']);
});

it('without a payload, the pixels are encoded and signed unmarked', async () => {
	const marked = await marker().markGenerated({ pixels: await fittedPixels(), media: MEDIA_DETAILS.png, model: 'p-image', prompt: 'a harbour', source: { bytes: provided, media: sniffMedia(provided)!, changes: ['resized'] } });
	expect((await detectWatermarkInImage(marked.bytes)).found).toBe(false);
	expect(marked.watermark).toBeUndefined();
	expect(actionsOf((await readC2paManifest(marked.bytes, 'image/png'))!).map((action: { action: string }) => action.action)).toEqual(['c2pa.created', 'c2pa.resized']);
});

it('unmarked (`--provenance off`): the pixels encoded as they are, nothing claimed', async () => {
	const pixels = await fittedPixels();
	const expected = await sharp(Buffer.from(pixels.data), { raw: { width: 720, height: 720, channels: 3 } }).png().toBuffer();
	const answered = await UNMARKED.markGenerated({ pixels, media: MEDIA_DETAILS.png, model: 'p-image', prompt: 'a harbour', source: { bytes: provided, media: sniffMedia(provided)!, changes: ['resized'] } });
	expect(answered.bytes.equals(expected)).toBe(true);
	expect(answered.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
});
