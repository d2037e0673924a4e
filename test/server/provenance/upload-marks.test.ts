/**
 * Uploads without a conversion are hosted byte for byte, manifest and XMP intact, and the answer
 * says what they carry (`kept`, the digital source type), found while they streamed in.
 */
import { createHash } from 'node:crypto';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { readC2paManifest } from '../support/c2pa-reader';
import { call, download, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';

const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

let server: ServiceUnderTest;
let signed: Buffer;

beforeAll(async () => {
	server = await startInProcessServer();
	const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', output_format: 'jpeg' });
	signed = Buffer.from(answer.body.data[0].b64_json, 'base64');
});
afterAll(() => server.stop({ removeData: true }));

describe('uploads without a conversion', () => {
	it.each([
		['multipart', () => uploadFile(server, signed)],
		['base64 JSON', () => postJson(server, '/v1/uploads', { file: signed.toString('base64') })],
	])('%s: a signed image is hosted unchanged and answered as kept, with its digital source type', async (_way, upload) => {
		const answer = await upload();
		expect(answer.status).toBe(200);
		expect(answer.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: TRAINED });
		const hosted = await download(answer.body.imageUrl);
		expect(sha(hosted.bytes)).toBe(sha(signed));
		expect((await readC2paManifest(hosted.bytes, 'image/jpeg'))?.validation_state).toBe('Valid');
		const info = await call(server, `/v1/files/${answer.body.id}`);
		expect(info.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: TRAINED });
	});

	it('a photo without marks is answered as none', async () => {
		const answer = await uploadFile(server, await makeImage('png', 300, 200));
		expect(answer.body.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
	});
});
