/**
 * What we sign we have verified (docs/provenance.md): an upload's digital source type,
 * creator or credit reaches our manifest and the answer only from a C2PA manifest that c2pa-rs
 * parses and validates, never from XMP anyone can write or from bytes that merely look like a
 * manifest store; `kept` only for a manifest that validates.
 */
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { activeManifest, ownTrustAnchor, readC2paManifest } from '../support/c2pa-reader';
import { exiftool, exiftoolWrite } from '../support/exiftool';
import { download, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';

const CAPTURE = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture';
const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const AGENCY = 'Northern Wire Press Agency';

let server: ServiceUnderTest;
let anchor: string;
/** A generated picture whose marks are gone, dressed as an agency's camera shot in XMP and IPTC. */
let laundered: Buffer;
/** A plain JPEG with a manifest store's JUMBF description and a camera's source type appended after its end. */
let lookalike: Buffer;

beforeAll(async () => {
	server = await startInProcessServer();
	anchor = ownTrustAnchor(server.dataDir);
	laundered = await exiftoolWrite(await makeImage('jpeg', 200, 120), [
		`-XMP-iptcExt:DigitalSourceType=${CAPTURE}`,
		`-XMP-dc:Creator=${AGENCY}`,
		`-XMP-photoshop:Credit=${AGENCY}`,
		`-IPTC:By-line=${AGENCY}`,
		`-IPTC:Credit=${AGENCY}`,
	]);
	const storeDescription = Buffer.concat([Buffer.from('jumdc2pa', 'latin1'), Buffer.from('00110010800000aa00389b71', 'hex')]);
	lookalike = Buffer.concat([await makeImage('jpeg', 200, 120), storeDescription, Buffer.from(`<x DigitalSourceType="${CAPTURE}"/>`, 'latin1')]);
});
afterAll(() => server.stop({ removeData: true }));

const NOTHING_VERIFIED = { c2pa: 'none', digital_source_type: null };

describe('without a conversion: hosted as sent, not kept, no source type', () => {
	const files = [['unsigned XMP and IPTC claims', () => laundered] as const, ['bytes that only look like a manifest store', () => lookalike] as const];
	const ways = [['multipart', (bytes: Buffer) => uploadFile(server, bytes)] as const, ['base64 JSON', (bytes: Buffer) => postJson(server, '/v1/uploads', { file: bytes.toString('base64') })] as const];
	it.each(files.flatMap(([what, bytes]) => ways.map(([way, send]) => [`${what}, ${way}`, bytes, send] as const)))('%s', async (_, bytes, send) => {
		const answer = await send(bytes());
		expect(answer.status).toBe(200);
		expect(answer.body.provenance).toEqual(NOTHING_VERIFIED);
		expect((await download(answer.body.imageUrl)).bytes.equals(bytes())).toBe(true);
	});
});

describe('unsigned XMP and IPTC claims', () => {
	it('converted: signed, but neither our manifest nor the answer says camera or names the agency', async () => {
		const answer = await uploadFile(server, laundered, { output_format: 'png' });
		expect(answer.status).toBe(200);
		expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
		const { bytes } = await download(answer.body.imageUrl);
		const report = (await readC2paManifest(bytes, 'image/png', anchor))!;
		expect(report.validation_state).toBe('Trusted');
		const assertions = JSON.stringify(activeManifest(report).assertions);
		expect(assertions).not.toMatch(/digitalCapture|digitalSourceType/i);
		expect(assertions).not.toContain(AGENCY);
		// The uploader's own words still travel with the file, as theirs.
		expect(await exiftool(bytes)).toMatchObject({ 'XMP-dc:Creator': AGENCY });
	});
});

describe('bytes that only look like a manifest store', () => {
	it('converted: signed, with no source type', async () => {
		const answer = await postJson(server, '/v1/uploads', { file: lookalike.toString('base64'), output_format: 'webp' });
		expect(answer.status).toBe(200);
		expect(answer.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
	});
});

describe('a manifest that validates', () => {
	let signed: Buffer;
	beforeAll(async () => {
		const generated = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', output_format: 'jpeg' });
		signed = Buffer.from(generated.body.data[0].b64_json, 'base64');
	});

	it('is kept as sent, its source type read from its manifest', async () => {
		const answer = await uploadFile(server, signed);
		expect(answer.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: TRAINED });
	});

	it('keeps its source type through two conversions, each signed over the last', async () => {
		const once = await uploadFile(server, signed, { output_format: 'png' });
		expect(once.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: TRAINED });
		const twice = await uploadFile(server, (await download(once.body.imageUrl)).bytes, { output_format: 'webp' });
		expect(twice.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: TRAINED });
		const hosted = await uploadFile(server, (await download(twice.body.imageUrl)).bytes);
		expect(hosted.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: TRAINED });
	});

	it('one whose XMP was rewritten afterwards no longer validates: not kept, and the new XMP claims nothing', async () => {
		// JPEG's XMP sits outside the hash binding's exclusions: rewriting it breaks the manifest.
		const relabelled = await exiftoolWrite(signed, [`-XMP-iptcExt:DigitalSourceType=${CAPTURE}`]);
		const answer = await uploadFile(server, relabelled);
		expect(answer.body.provenance).toEqual(NOTHING_VERIFIED);
		// Converted, its broken manifest goes into ours as the parent, failures recorded: our
		// manifest validates, but the source type its parent names is not believed.
		const converted = await uploadFile(server, relabelled, { output_format: 'png' });
		expect(converted.body.provenance).toEqual({ c2pa: 'signed', digital_source_type: null });
		const convertedBytes = (await download(converted.body.imageUrl)).bytes;
		expect(Object.keys((await readC2paManifest(convertedBytes, 'image/png'))!.manifests)).toHaveLength(2);
		const hosted = await uploadFile(server, convertedBytes);
		expect(hosted.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: null });
	});
});
