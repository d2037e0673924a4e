/**
 * POST /v1/uploads against the built server over loopback: the six request forms for images and
 * videos, conversion, byte-identical round trips, and every way an upload can be wrong.
 */
import sharp from 'sharp';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { download, expectApiError, postJson, uploadFile } from '../support/http';
import { startMediaHost, type MediaHost } from '../support/media-host';
import { makeImage, makeMov, makeMp4, makePdf, makeWebm, samePixels } from '../support/media';

let server: ServiceUnderTest;
let media: MediaHost;

beforeAll(async () => {
	[server, media] = await Promise.all([startInProcessServer({ args: ['--allow-private-urls'] }), startMediaHost()]);
});
afterAll(async () => {
	await Promise.all([server?.stop({ removeData: true }), media?.close()]);
});

const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;

async function expectHosted(url: string, expected: Buffer, mimeType: string): Promise<void> {
	expect(url.startsWith(`${server.origin}/files/`)).toBe(true);
	const file = await download(url);
	expect(file.status).toBe(200);
	expect(file.headers.get('content-type')).toBe(mimeType);
	expect(file.bytes.equals(expected)).toBe(true);
}

describe('image uploads: the three request forms', () => {
	let png: Buffer;
	beforeAll(async () => {
		png = await makeImage('png');
	});

	it('multipart file → imageUrl with the same bytes, and expiresAt about a day ahead', async () => {
		const answer = await uploadFile(server, png, {}, { fileName: 'picture.png', mimeType: 'image/png' });
		expect(answer.status).toBe(200);
		expect(Object.keys(answer.body).sort()).toEqual(['expiresAt', 'id', 'imageUrl', 'mimeType', 'provenance', 'sizeBytes']);
		expect(answer.body.imageUrl).toMatch(/\/files\/[A-Za-z0-9_-]{22,}\.png$/);
		const expiresIn = Date.parse(answer.body.expiresAt) - Date.now();
		expect(expiresIn).toBeGreaterThan(86_000_000);
		expect(expiresIn).toBeLessThanOrEqual(86_400_000);
		await expectHosted(answer.body.imageUrl, png, 'image/png');
	});

	it('JSON with a URL', async () => {
		const url = media.put('/pictures/cat.png', png);
		const answer = await postJson(server, '/v1/uploads', { image: url });
		expect(answer.status).toBe(200);
		await expectHosted(answer.body.imageUrl, png, 'image/png');
	});

	it('JSON with a data URI', async () => {
		const answer = await postJson(server, '/v1/uploads', { image: dataUri('image/png', png) });
		expect(answer.status).toBe(200);
		await expectHosted(answer.body.imageUrl, png, 'image/png');
	});

	it('JSON with raw base64', async () => {
		const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64') });
		expect(answer.status).toBe(200);
		await expectHosted(answer.body.imageUrl, png, 'image/png');
	});

	it.each(['jpeg', 'webp', 'gif', 'avif'] as const)('keeps a %s image byte for byte', async (format) => {
		const bytes = await makeImage(format);
		const answer = await postJson(server, '/v1/uploads', { image: bytes.toString('base64') });
		expect(answer.status).toBe(200);
		const extension = format === 'jpeg' ? 'jpg' : format;
		expect(answer.body.imageUrl.endsWith(`.${extension}`)).toBe(true);
		await expectHosted(answer.body.imageUrl, bytes, `image/${format}`);
	});

	it('decides the type from the bytes, not from the name, the part type or the data URI', async () => {
		const jpeg = await makeImage('jpeg');
		const multipart = await uploadFile(server, jpeg, {}, { fileName: 'lies.png', mimeType: 'image/png' });
		expect(multipart.body.imageUrl).toMatch(/\.jpg$/);
		const json = await postJson(server, '/v1/uploads', { image: dataUri('image/png', jpeg) });
		expect(json.body.imageUrl).toMatch(/\.jpg$/);
		await expectHosted(json.body.imageUrl, jpeg, 'image/jpeg');
	});
});

describe('video uploads: the three request forms', () => {
	const videos = [
		['mp4', makeMp4(), 'video/mp4'],
		['mov', makeMov(), 'video/quicktime'],
		['webm', makeWebm(), 'video/webm'],
	] as const;

	it.each(videos)('multipart %s → videoUrl, byte-identical', async (extension, bytes, mime) => {
		const answer = await uploadFile(server, bytes, {}, { fileName: `clip.${extension}` });
		expect(answer.status).toBe(200);
		expect(Object.keys(answer.body).sort()).toEqual(['expiresAt', 'id', 'mimeType', 'provenance', 'sizeBytes', 'videoUrl']);
		expect(answer.body.videoUrl.endsWith(`.${extension}`)).toBe(true);
		await expectHosted(answer.body.videoUrl, bytes, mime);
	});

	it.each(videos)('JSON URL, data URI and raw base64 for %s', async (extension, bytes, mime) => {
		const url = media.put(`/clips/clip.${extension}`, bytes);
		for (const video of [url, dataUri(mime, bytes), bytes.toString('base64')]) {
			const answer = await postJson(server, '/v1/uploads', { video });
			expect(answer.status).toBe(200);
			await expectHosted(answer.body.videoUrl, bytes, mime);
		}
	});
});

describe('JSON `file`: the bytes decide between image and video', () => {
	type Encode = (bytes: Buffer, mime: string, name: string) => string;
	const forms: Array<[string, Encode]> = [
		['a URL', (bytes, mime, name) => media.put(`/any/${name}`, bytes, { 'content-type': mime })],
		['a data URI', (bytes, mime) => dataUri(mime, bytes)],
		['raw base64', (bytes) => bytes.toString('base64')],
	];

	it.each(forms)('an image and a video as %s', async (_form, encode) => {
		const png = await makeImage('png');
		const image = await postJson(server, '/v1/uploads', { file: encode(png, 'image/png', 'picture') });
		expect(image.status).toBe(200);
		expect(image.body.videoUrl).toBeUndefined();
		await expectHosted(image.body.imageUrl, png, 'image/png');

		const mp4 = makeMp4(4000);
		const video = await postJson(server, '/v1/uploads', { file: encode(mp4, 'video/mp4', 'clip') });
		expect(video.status).toBe(200);
		expect(video.body.imageUrl).toBeUndefined();
		await expectHosted(video.body.videoUrl, mp4, 'video/mp4');
	});

	it('fetches a video URL without extension exactly once', async () => {
		const webm = makeWebm(5000);
		const url = media.put('/stream-without-extension', webm);
		const hitsBefore = media.hits();
		const answer = await postJson(server, '/v1/uploads', { file: url });
		expect(answer.status).toBe(200);
		expect(media.hits() - hitsBefore).toBe(1);
		await expectHosted(answer.body.videoUrl, webm, 'video/webm');
	});

	it('converts an image with output_format, and refuses output_format with a video (400, nothing hosted)', async () => {
		const png = await makeImage('png', 30, 20);
		const converted = await postJson(server, '/v1/uploads', { file: png.toString('base64'), output_format: 'webp' });
		expect(converted.status).toBe(200);
		expect((await sharp((await download(converted.body.imageUrl)).bytes).metadata()).format).toBe('webp');

		const url = media.put('/clip-for-webp', makeMp4());
		expectApiError(await postJson(server, '/v1/uploads', { file: url, output_format: 'webp' }), 400, 'output_format', /images only/);
		expectApiError(await postJson(server, '/v1/uploads', { file: makeMov().toString('base64'), output_format: 'png' }), 400, 'output_format', /images only/);
	});

	it('400 when file comes with image or video; 415 for bytes that are neither; 400 for a bad value', async () => {
		const png = (await makeImage('png')).toString('base64');
		expectApiError(await postJson(server, '/v1/uploads', { file: png, image: png }), 400, 'image', /exactly one of 'file', 'image' or 'video', not 'file' and 'image'/);
		expectApiError(await postJson(server, '/v1/uploads', { file: png, video: png }), 400, 'video', /not 'file' and 'video'/);
		expectApiError(await postJson(server, '/v1/uploads', { file: makePdf().toString('base64') }), 415, 'file');
		expectApiError(await postJson(server, '/v1/uploads', { file: media.put('/doc-by-file.pdf', makePdf()) }), 415, 'file');
		expectApiError(await postJson(server, '/v1/uploads', { file: 42 }), 400, 'file', /must be a string/);
		expectApiError(await postJson(server, '/v1/uploads', { file: 'ftp://example.com/a.png' }), 400, 'file', /scheme/);
	});
});

describe('output_format conversion', () => {
	it.each([
		['png', 'webp', 'webp'],
		['jpeg', 'png', 'png'],
		['webp', 'jpg', 'jpeg'],
		['png', 'jpeg', 'jpeg'],
		['gif', 'png', 'png'],
		['avif', 'webp', 'webp'],
	] as const)('%s → %s (multipart), decoded and checked', async (from, to, decodedFormat) => {
		const source = await makeImage(from, 80, 60);
		const answer = await uploadFile(server, source, { output_format: to });
		expect(answer.status).toBe(200);
		const file = await download(answer.body.imageUrl);
		const metadata = await sharp(file.bytes).metadata();
		expect(metadata.format).toBe(decodedFormat === 'jpeg' ? 'jpeg' : decodedFormat);
		expect([metadata.width, metadata.height]).toEqual([80, 60]);
		expect(file.headers.get('content-type')).toBe(`image/${decodedFormat}`);
	});

	it('accepts output_format before or after the file part', async () => {
		const png = await makeImage('png');
		const before = await uploadFile(server, png, { output_format: 'webp' }, { fieldsFirst: true });
		const after = await uploadFile(server, png, { output_format: 'webp' });
		expect(before.body.imageUrl).toMatch(/\.webp$/);
		expect(after.body.imageUrl).toMatch(/\.webp$/);
	});

	it('converts JSON uploads too, and keeps colours', async () => {
		const png = await makeImage('png', 40, 40);
		const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64'), output_format: 'jpg' });
		expect(answer.body.imageUrl).toMatch(/\.jpg$/);
		const { data } = await sharp((await download(answer.body.imageUrl)).bytes).raw().toBuffer({ resolveWithObject: true });
		// Bottom-right pixel is the background colour (200, 40, 90), within JPEG error.
		const last = data.length - 3;
		expect(Math.abs(data[last]! - 200)).toBeLessThan(12);
		expect(Math.abs(data[last + 1]! - 40)).toBeLessThan(12);
		expect(Math.abs(data[last + 2]! - 90)).toBeLessThan(12);
	});

	it('same format as the input is still re-encoded (its metadata goes), same size and pixels', async () => {
		const png = await sharp(await makeImage('png')).withExif({ IFD0: { Artist: 'Someone' } }).png().toBuffer();
		const answer = await uploadFile(server, png, { output_format: 'png' });
		const file = await download(answer.body.imageUrl);
		expect(file.headers.get('content-type')).toBe('image/png');
		expect(file.bytes.equals(png)).toBe(false);
		const meta = await sharp(file.bytes).metadata();
		expect({ width: meta.width, height: meta.height, exif: meta.exif }).toEqual({ width: 64, height: 48, exif: undefined });
		expect(await samePixels(file.bytes, png)).toBe(true);
	});

	it('refuses an unknown output_format, naming it', async () => {
		const png = await makeImage('png');
		expectApiError(await uploadFile(server, png, { output_format: 'bmp' }), 400, 'output_format', /webp, png, jpg/);
		expectApiError(await postJson(server, '/v1/uploads', { image: png.toString('base64'), output_format: 'tiff' }), 400, 'output_format');
		expectApiError(await postJson(server, '/v1/uploads', { image: png.toString('base64'), output_format: 3 }), 400, 'output_format');
	});

	it('refuses output_format with a video, in both forms', async () => {
		expectApiError(await uploadFile(server, makeMp4(), { output_format: 'webp' }), 400, 'output_format', /images only/);
		expectApiError(await postJson(server, '/v1/uploads', { video: makeMp4().toString('base64'), output_format: 'png' }), 400, 'output_format');
	});

	it('answers 400 naming the field when image bytes are damaged and cannot be converted', async () => {
		const png = await makeImage('png');
		const damaged = Buffer.concat([png.subarray(0, 40), Buffer.alloc(200, 0x55)]);
		expectApiError(await uploadFile(server, damaged, { output_format: 'webp' }), 400, 'file', /could not be decoded/);
	});
});

describe('wrong and mismatched media', () => {
	it('415 for bytes that are neither image nor video (all forms)', async () => {
		const pdf = makePdf();
		expectApiError(await uploadFile(server, pdf), 415, 'file', /png, jpeg, webp, gif, avif.*mp4, mov, webm/);
		expectApiError(await postJson(server, '/v1/uploads', { image: pdf.toString('base64') }), 415, 'image');
		expectApiError(await postJson(server, '/v1/uploads', { video: dataUri('video/mp4', pdf) }), 415, 'video');
		expectApiError(await postJson(server, '/v1/uploads', { image: media.put('/doc.pdf', pdf) }), 415, 'image');
	});

	it('400 when video bytes come as image, or image bytes as video', async () => {
		const png = await makeImage('png');
		expectApiError(await postJson(server, '/v1/uploads', { image: makeWebm().toString('base64') }), 400, 'image', /video.*send it as 'video'/);
		expectApiError(await postJson(server, '/v1/uploads', { video: png.toString('base64') }), 400, 'video', /image.*send it as 'image'/);
		expectApiError(await postJson(server, '/v1/uploads', { video: media.put('/still.png', png) }), 400, 'video');
	});

	it('400 for missing, both, unknown and ill-typed fields', async () => {
		const png = await makeImage('png');
		expectApiError(await postJson(server, '/v1/uploads', {}), 400, 'file', /exactly one of 'file', 'image' or 'video'/);
		expectApiError(await postJson(server, '/v1/uploads', { image: png.toString('base64'), video: makeMp4().toString('base64') }), 400, 'video', /not 'image' and 'video'/);
		expectApiError(await postJson(server, '/v1/uploads', { files: png.toString('base64') }), 400, 'files', /Unknown field/);
		expectApiError(await postJson(server, '/v1/uploads', { image: 42 }), 400, 'image', /must be a string/);
		expectApiError(await postJson(server, '/v1/uploads', { image: '' }), 400, 'image');
		expectApiError(await postJson(server, '/v1/uploads', { image: 'not base64 at all!' }), 400, 'image', /base64/);
		expectApiError(await postJson(server, '/v1/uploads', { image: 'ftp://example.com/a.png' }), 400, 'image', /scheme/);
		expectApiError(await postJson(server, '/v1/uploads', { image: 'data:image/png,abc' }), 400, 'image', /base64/);
		expectApiError(await postJson(server, '/v1/uploads', [png.toString('base64')]), 400, null, /JSON object/);
	});

	it('400 for multipart without a file part, with a wrong part name, or with two files', async () => {
		const png = await makeImage('png');
		const onlyField = new FormData();
		onlyField.append('output_format', 'png');
		const answer = await fetch(`${server.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body: onlyField });
		expectApiError({ status: answer.status, headers: answer.headers, body: await answer.json() }, 400, 'file', /no part 'file'/);

		expectApiError(await uploadFile(server, png, {}, { fileField: 'image' }), 400, 'image', /send the file in the part 'file'/);
		expectApiError(await uploadFile(server, png, {}, { fileField: 'upload' }), 400, 'upload', /Unknown file part/);
		expectApiError(await uploadFile(server, png, { colour: 'red' }), 400, 'colour', /Unknown field/);

		const twoFiles = new FormData();
		twoFiles.append('file', new Blob([png]), 'a.png');
		twoFiles.append('file', new Blob([png]), 'b.png');
		const two = await fetch(`${server.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body: twoFiles });
		expectApiError({ status: two.status, headers: two.headers, body: await two.json() }, 400, 'file', /exactly one file/);
	});

	it('400 for an empty file', async () => {
		expectApiError(await uploadFile(server, Buffer.alloc(0)), 400, 'file', /empty/);
	});

	it('400 for a URL the host answers with 404, naming the field', async () => {
		expectApiError(await postJson(server, '/v1/uploads', { image: `${media.origin}/missing.png` }), 400, 'image', /HTTP 404/);
	});

	it('415 for a body that is neither JSON nor multipart; 400 for broken JSON; 400 for no body', async () => {
		const text = await fetch(`${server.baseUrl}/uploads`, {
			method: 'POST',
			headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'text/plain' },
			body: 'hello',
		});
		expectApiError({ status: text.status, headers: text.headers, body: await text.json() }, 415, null, /Content-Type/);
		expectApiError(await postJson(server, '/v1/uploads', '{"image": '), 400, null, /not valid JSON/);
		const empty = await fetch(`${server.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` } });
		expectApiError({ status: empty.status, headers: empty.headers, body: await empty.json() }, 400, null, /multipart form.*JSON body/);
	});

	it('400 for a malformed multipart body', async () => {
		const answer = await fetch(`${server.baseUrl}/uploads`, {
			method: 'POST',
			headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'multipart/form-data; boundary=xyz' },
			body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
		});
		const body = await answer.json();
		expectApiError({ status: answer.status, headers: answer.headers, body }, 400, null, /multipart body is malformed/);
	});
});

describe('many at once', () => {
	it('40 parallel uploads succeed with distinct URLs and the right bytes', async () => {
		const inputs = await Promise.all(Array.from({ length: 40 }, (_, i) => makeImage('png', 16 + i, 16)));
		const answers = await Promise.all(
			inputs.map((bytes, i) => (i % 2 ? uploadFile(server, bytes) : postJson(server, '/v1/uploads', { image: bytes.toString('base64') }))),
		);
		expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(200));
		const urls = answers.map((answer) => answer.body.imageUrl as string);
		expect(new Set(urls).size).toBe(40);
		const files = await Promise.all(urls.map((url) => download(url)));
		files.forEach((file, i) => expect(file.bytes.equals(inputs[i]!)).toBe(true));
	});
});

describe('fields after the file part', () => {
	// The whole form reaches the server faster than the file is stored, so its trailing fields wait
	// in the multipart parser's buffer when the request ends: they must still count.
	it('a large file followed by expires_in: the option applies, every time', async () => {
		const video = makeMp4(16 * 1024 * 1024);
		for (let round = 0; round < 8; round++) {
			const answer = await uploadFile(server, video, { expires_in: '120' }, { fileName: 'clip.mp4', mimeType: 'video/mp4' });
			expect(answer.status).toBe(200);
			const lifetimeSeconds = (Date.parse(answer.body.expiresAt) - Date.now()) / 1000;
			expect(lifetimeSeconds).toBeGreaterThan(60);
			expect(lifetimeSeconds).toBeLessThanOrEqual(120);
		}
	}, 60_000);
});
