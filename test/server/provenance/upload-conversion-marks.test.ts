/**
 * Uploads that are converted or fitted keep their provenance and lose what identifies a place or
 * a device (docs/provenance.md): our signed manifest with the original as parent ingredient;
 * the original's XMP digital source type, creator and copyright carried on in XMP as the
 * uploader's words (the answer names a source type only from a manifest that validates); no GPS,
 * serial numbers or owner names; the orientation applied. Read back by ExifTool and c2pa-rs.
 */
import sharp from 'sharp';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { actionsOf, activeManifest, ownTrustAnchor, readC2paManifest } from '../support/c2pa-reader';
import { exiftool, exiftoolWrite } from '../support/exiftool';
import { download, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';

const COMPOSITE = 'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia';
const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

let server: ServiceUnderTest;
let anchor: string;
let photo: Buffer;

beforeAll(async () => {
	server = await startInProcessServer();
	anchor = ownTrustAnchor(server.dataDir);
	// 300×200 stored, to be shown turned a quarter (orientation 6): upright it is 200×300.
	photo = await exiftoolWrite(await makeImage('jpeg', 300, 200), [
		'-GPSLatitude=48.8584',
		'-GPSLatitudeRef=N',
		'-GPSLongitude=2.2945',
		'-GPSLongitudeRef=E',
		'-SerialNumber=SN-4711',
		'-OwnerName=Jane Owner',
		'-XMP-aux:SerialNumber=LENS-9',
		'-Artist=Alice Artist',
		'-Copyright=(c) Alice Artist',
		'-Orientation#=6',
		`-XMP-iptcExt:DigitalSourceType=${COMPOSITE}`,
	]);
});
afterAll(() => server.stop({ removeData: true }));

const PRIVATE_TAGS = /GPS|SerialNumber|OwnerName/;

it.each([
	['output_format png', { output_format: 'png' }, 'image/png', ['c2pa.opened', 'c2pa.converted'], { width: 200, height: 300 }],
	['max_side 150 (Fit For)', { max_side: '150' }, 'image/jpeg', ['c2pa.opened', 'c2pa.resized'], { width: 100, height: 150 }],
] as const)('%s: signed, XMP source type and credits carried on, place and device dropped, upright', async (_, fields, mimeType, actions, size) => {
	const answer = await uploadFile(server, photo, fields);
	expect(answer.status).toBe(200);
	// The source type is only the uploader's XMP, unsigned: the answer does not repeat it.
	expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
	const { bytes } = await download(answer.body.imageUrl);

	const tags = await exiftool(bytes);
	expect(Object.keys(tags).filter((tag) => PRIVATE_TAGS.test(tag))).toEqual([]);
	expect(tags).toMatchObject({ 'XMP-iptcExt:DigitalSourceType': COMPOSITE, 'XMP-dc:Creator': 'Alice Artist', 'XMP-dc:Rights': '(c) Alice Artist' });
	expect(tags['IFD0:Orientation'] ?? 1).toBe(1);
	const { width, height } = await sharp(bytes).metadata();
	expect({ width, height }).toEqual(size);

	const report = (await readC2paManifest(bytes, mimeType, anchor))!;
	expect(report.validation_status ?? []).toEqual([]);
	expect(report.validation_state).toBe('Trusted');
	expect(actionsOf(report).map((action) => action.action)).toEqual(actions);
	expect(activeManifest(report).ingredients![0]).toMatchObject({ relationship: 'parentOf', title: 'original.jpg' });
});

describe('a conversion that changes nothing visible still re-encodes, drops what identifies, and signs', () => {
	const PRIVATE = ['-GPSLatitude=48.8584', '-GPSLatitudeRef=N', '-GPSLongitude=2.2945', '-GPSLongitudeRef=E', '-SerialNumber=SN-4711', '-OwnerName=Jane Owner', '-Artist=Alice Artist', '-Copyright=(c) Alice Artist'];
	let uprightJpeg: Buffer;
	let png: Buffer;
	beforeAll(async () => {
		// Upright already (no orientation tag) and small: nothing asked below needs a pixel changed.
		uprightJpeg = await exiftoolWrite(await makeImage('jpeg', 300, 200), PRIVATE);
		png = await exiftoolWrite(await makeImage('png', 300, 200), ['-XMP-dc:Creator=Alice Artist', '-XMP-dc:Rights=(c) Alice Artist', '-XMP-aux:OwnerName=Jane Owner', '-XMP-aux:SerialNumber=SN-4711', '-XMP-exif:GPSLatitude=48.8584', '-XMP-exif:GPSLatitudeRef=N']);
	});

	it.each([
		['output_format jpg on a JPEG (multipart, fields after the file)', () => uploadFile(server, uprightJpeg, { output_format: 'jpg' }), 'image/jpeg'],
		['output_format jpg on a JPEG (multipart, fields first)', () => uploadFile(server, uprightJpeg, { output_format: 'jpg' }, { fieldsFirst: true }), 'image/jpeg'],
		['output_format jpeg on a JPEG (base64 JSON)', () => postJson(server, '/v1/uploads', { file: uprightJpeg.toString('base64'), output_format: 'jpeg' }), 'image/jpeg'],
		['output_format png on a PNG', () => uploadFile(server, png, { output_format: 'png' }), 'image/png'],
		['max_side larger than the image', () => uploadFile(server, uprightJpeg, { max_side: '4000' }), 'image/jpeg'],
		['max_bytes the image already meets', () => postJson(server, '/v1/uploads', { file: uprightJpeg.toString('base64'), max_bytes: 10_000_000 }), 'image/jpeg'],
	] as const)('%s', async (_, upload, mimeType) => {
		const answer = await upload();
		expect(answer.status).toBe(200);
		expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
		const { bytes } = await download(answer.body.imageUrl);
		expect(answer.body.sizeBytes).toBe(bytes.length);

		const tags = await exiftool(bytes);
		expect(Object.keys(tags).filter((tag) => PRIVATE_TAGS.test(tag))).toEqual([]);
		expect(tags).toMatchObject({ 'XMP-dc:Creator': 'Alice Artist', 'XMP-dc:Rights': '(c) Alice Artist' });
		expect(JSON.stringify(tags)).not.toMatch(/Jane Owner|SN-4711/);
		expect((await sharp(bytes).metadata()).format).toBe(mimeType.split('/')[1]);

		const report = (await readC2paManifest(bytes, mimeType, anchor))!;
		expect(report.validation_status ?? []).toEqual([]);
		expect(report.validation_state).toBe('Trusted');
		expect(actionsOf(report).map((action) => action.action)).toEqual(['c2pa.opened', 'c2pa.transcoded']);
		expect(activeManifest(report).ingredients![0]).toMatchObject({ relationship: 'parentOf' });
	});
});

it('a signed image converted: its manifest is the parent ingredient of ours', async () => {
	const generated = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' });
	const answer = await postJson(server, '/v1/uploads', { file: generated.body.data[0].b64_json, output_format: 'webp' });
	expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: TRAINED });
	const report = (await readC2paManifest((await download(answer.body.imageUrl)).bytes, 'image/webp', anchor))!;
	expect(report.validation_state).toBe('Trusted');
	expect(Object.keys(report.manifests)).toHaveLength(2);
});

it('max_bytes holds with the marks included', async () => {
	const big = await sharp({ create: { width: 1600, height: 1200, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
	const answer = await uploadFile(server, big, { max_bytes: '60000', output_format: 'jpg' });
	expect(answer.status).toBe(200);
	expect(answer.body.provenance.c2pa).toBe('signed');
	expect(answer.body.sizeBytes).toBeLessThanOrEqual(60_000);
	expect((await download(answer.body.imageUrl)).bytes.length).toBe(answer.body.sizeBytes);
});

it('--provenance off: a conversion drops everything and says none', async () => {
	const unmarked = await startInProcessServer({ args: ['--provenance', 'off'] });
	try {
		for (const fields of [{ output_format: 'png' }, { output_format: 'jpg' }, { max_bytes: '10000000' }] as Record<string, string>[]) {
			const answer = await uploadFile(unmarked, photo, fields);
			expect(answer.body.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
			const tags = await exiftool((await download(answer.body.imageUrl)).bytes);
			expect(Object.keys(tags).filter((tag) => PRIVATE_TAGS.test(tag))).toEqual([]);
		}
	} finally {
		await unmarked.stop({ removeData: true });
	}
});

it('an upload whose manifest is damaged: hosted as sent without a conversion (not kept: it does not validate), converted and signed with one', async () => {
	const generated = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', output_format: 'jpeg' });
	const damaged = Buffer.from(generated.body.data[0].b64_json, 'base64');
	// Bytes in the middle of the manifest store (claim, assertions, signature) overwritten.
	const store = damaged.indexOf('jumdc2pa');
	damaged.fill(0x41, store + 100, store + 900);
	const asSent = await uploadFile(server, damaged);
	expect(asSent.body.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
	expect((await download(asSent.body.imageUrl)).bytes.equals(damaged)).toBe(true);
	const converted = await uploadFile(server, damaged, { output_format: 'png' });
	expect(converted.status).toBe(200);
	expect(converted.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
	const report = (await readC2paManifest((await download(converted.body.imageUrl)).bytes, 'image/png', anchor))!;
	expect(actionsOf(report)[0]).toMatchObject({ action: 'c2pa.opened' });
});

it('credits only in XMP (dc:creator, dc:rights) survive a conversion too; XMP owner and location do not', async () => {
	const png = await exiftoolWrite(await makeImage('png', 120, 80), [
		'-XMP-dc:Creator=Bob Maker',
		'-XMP-dc:Rights=(c) Bob & Co',
		'-XMP-aux:OwnerName=Bob Private',
		'-XMP-exif:GPSLatitude=40.7',
		'-XMP-exif:GPSLatitudeRef=N',
	]);
	const answer = await uploadFile(server, png, { output_format: 'jpg' });
	expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
	const tags = await exiftool((await download(answer.body.imageUrl)).bytes);
	expect(tags).toMatchObject({ 'XMP-dc:Creator': 'Bob Maker', 'XMP-dc:Rights': '(c) Bob & Co' });
	expect(Object.keys(tags).filter((tag) => PRIVATE_TAGS.test(tag))).toEqual([]);
});
