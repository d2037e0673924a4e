/** The ImageGen Upload node run by n8n-core's engine against the real server on loopback. */
import { createHash } from 'node:crypto';
import sharp from 'sharp';

import { makeImage, makeMov, makeMp4, makePdf, makeWebm, patterned } from '../server/support/media';
import { IMAGE_GEN_UPLOAD, runWorkflow, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

function upload(parameters: Record<string, unknown>, extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return { name: 'Upload', type: IMAGE_GEN_UPLOAD, parameters, ...extra };
}

async function runUpload(parameters: Record<string, unknown>, seed?: SeedItem[], extra: Partial<WorkflowNode> = {}) {
	const result = await runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes: [upload(parameters, extra)], seed });
	return { result, items: result.output('Upload'), error: result.error('Upload') };
}

async function fetchHosted(url: unknown) {
	expect(String(url).startsWith(`${env.server.origin}/files/`)).toBe(true);
	const response = await fetch(String(url));
	expect(response.status).toBe(200);
	return { contentType: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

const binaryItem = (bytes: Buffer, fileName: string, mimeType: string): SeedItem[] => [{ binary: { data: { bytes, fileName, mimeType } } }];
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('binary input (streamed as multipart from n8n’s binary store)', () => {
	test('an image kept as sent: byte-identical, with imageUrl, url, mediaType and expiresAt', async () => {
		const png = await makeImage('png', 120, 90);
		const { items, error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'original' }, binaryItem(png, 'in.png', 'image/png'));
		expect(error).toBeUndefined();
		const [item] = items;
		expect(item!.json).toMatchObject({ imageUrl: expect.stringMatching(/\.png$/), url: item!.json.imageUrl, mediaType: 'image', expiresAt: expect.any(String) });
		expect(item!.json.id).toBe(String(item!.json.url).split('/').pop()!.replace(/\.png$/, ''));
		expect(Date.parse(String(item!.json.expiresAt))).toBeGreaterThan(Date.now() + 23 * 3600_000);
		expect((await fetchHosted(item!.json.url)).bytes.equals(png)).toBe(true);
		expect(env.proxy.requests[0]!.contentType).toMatch(/^multipart\/form-data; boundary=/);
		expect(item!.pairedItem).toEqual({ item: 0 });
	});

	test.each(['webp', 'png', 'jpg'] as const)('an image converted to %s', async (format) => {
		const jpeg = await makeImage('jpeg', 100, 50);
		const { items } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'image', outputFormat: format }, binaryItem(jpeg, 'in.jpg', 'image/jpeg'));
		const hosted = await fetchHosted(items[0]!.json.imageUrl);
		const meta = await sharp(hosted.bytes).metadata();
		expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: format === 'jpg' ? 'jpeg' : format, width: 100, height: 50 });
		expect(String(items[0]!.json.imageUrl)).toMatch(new RegExp(`\\.${format}$`));
	});

	test.each([
		['mp4', makeMp4(5000), 'video/mp4'],
		['mov', makeMov(5000), 'video/quicktime'],
		['webm', makeWebm(5000), 'video/webm'],
	])('a %s video keeps its bytes and type', async (extension, bytes, mimeType) => {
		const { items } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'video' }, binaryItem(bytes, `clip.${extension}`, mimeType));
		expect(items[0]!.json).toMatchObject({ mediaType: 'video', videoUrl: expect.stringMatching(new RegExp(`\\.${extension}$`)) });
		const hosted = await fetchHosted(items[0]!.json.videoUrl);
		expect(hosted.contentType).toBe(mimeType);
		expect(hosted.bytes.equals(bytes)).toBe(true);
	});

	test('a 48 MB video streams through unchanged', async () => {
		const video = Buffer.concat([makeMp4(1024), patterned(48 * 1024 * 1024)]);
		const { items, error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'webp' }, binaryItem(video, 'big.mp4', 'video/mp4'));
		expect(error).toBeUndefined();
		expect(items[0]!.json.mediaType).toBe('video');
		expect(sha256((await fetchHosted(items[0]!.json.videoUrl)).bytes)).toBe(sha256(video));
		expect(env.proxy.requests[0]!.bodyBytes).toBeGreaterThan(video.length);
	});

	test('auto with an output format converts images and leaves a video as it is', async () => {
		const { items, error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'png' }, binaryItem(makeMp4(), 'clip.mp4', 'video/mp4'));
		expect(error).toBeUndefined();
		expect(String(items[0]!.json.videoUrl)).toMatch(/\.mp4$/);
	});

	test('the kind comes from the bytes, not the declared MIME type', async () => {
		const png = await makeImage('png');
		const { items } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'image', outputFormat: 'original' }, binaryItem(png, 'file.bin', 'application/octet-stream'));
		expect(items[0]!.json.mediaType).toBe('image');
	});

	test('mediaType image with a video fails before any request, naming the parameter, the field and the item', async () => {
		const { error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'image', outputFormat: 'original' }, binaryItem(makeMp4(), 'clip.mp4', 'video/mp4'));
		expect(error?.message).toMatch(/Parameter 'mediaType' of item 0: expected an image, but the binary field 'data' holds video\/mp4/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('neither image nor video (a PDF) fails before any request', async () => {
		const { error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto' }, binaryItem(makePdf(), 'doc.pdf', 'application/pdf'));
		expect(error?.message).toMatch(/Item 0: the binary field 'data' holds neither a supported image .* nor a supported video .*application\/pdf/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('a missing binary field is named', async () => {
		const { error } = await runUpload({ inputType: 'binary', binaryPropertyName: 'file', mediaType: 'auto' });
		expect(error?.message).toMatch(/'file'/);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

describe('URL input (the service fetches it)', () => {
	test('an image converted to jpg', async () => {
		const url = env.media.put('/photo.png', await makeImage('png', 64, 32), { 'content-type': 'image/png' });
		const { items } = await runUpload({ inputType: 'url', url, mediaType: 'auto', outputFormat: 'jpg' });
		const hosted = await fetchHosted(items[0]!.json.imageUrl);
		expect(hosted.contentType).toBe('image/jpeg');
		expect((await sharp(hosted.bytes).metadata()).width).toBe(64);
	});

	test('auto: a video behind a URL without extension takes one request and one fetch of the URL', async () => {
		const bytes = makeWebm(3000);
		const url = env.media.put('/stream', bytes);
		const hitsBefore = env.media.hits();
		const { items, error } = await runUpload({ inputType: 'url', url, mediaType: 'auto', outputFormat: 'original' });
		expect(error).toBeUndefined();
		expect(items[0]!.json.mediaType).toBe('video');
		expect((await fetchHosted(items[0]!.json.videoUrl)).bytes.equals(bytes)).toBe(true);
		expect(env.proxy.requests).toHaveLength(1);
		expect(env.media.hits() - hitsBefore).toBe(1);
	});

	test('auto: an image behind a URL named like a video is an image (the bytes decide)', async () => {
		const url = env.media.put('/looks-like.mp4', await makeImage('png', 20, 10));
		const hitsBefore = env.media.hits();
		const { items, error } = await runUpload({ inputType: 'url', url, mediaType: 'auto', outputFormat: 'webp' });
		expect(error).toBeUndefined();
		expect(String(items[0]!.json.imageUrl)).toMatch(/\.webp$/);
		expect(env.proxy.requests).toHaveLength(1);
		expect(env.media.hits() - hitsBefore).toBe(1);
	});

	test('auto with an output format: a video URL is still hosted as given', async () => {
		const bytes = makeMp4(3000);
		const url = env.media.put('/clip.mp4', bytes, { 'content-type': 'video/mp4' });
		const { items, error } = await runUpload({ inputType: 'url', url, mediaType: 'auto', outputFormat: 'webp' });
		expect(error).toBeUndefined();
		expect(items[0]!.json.mediaType).toBe('video');
		expect((await fetchHosted(items[0]!.json.videoUrl)).bytes.equals(bytes)).toBe(true);
	});

	test('mediaType image for a video URL: the service message surfaces', async () => {
		const url = env.media.put('/clip2.mp4', makeMp4(), { 'content-type': 'video/mp4' });
		const { error } = await runUpload({ inputType: 'url', url, mediaType: 'image', outputFormat: 'original' });
		expect(error?.name).toBe('NodeApiError');
		expect(error?.message).toMatch(/'image' holds a video/);
	});

	test.each([
		['={{ "" }}', /Parameter 'url' of item 0: 'url' is empty/],
		['ftp://example.com/a.png', /Parameter 'url' of item 0: .*unsupported URL scheme 'ftp:'/],
		['aGVsbG8=', /Parameter 'url' of item 0: 'url' must be an http\(s\) URL/],
	])('%j fails before any request', async (url, message) => {
		const { error } = await runUpload({ inputType: 'url', url, mediaType: 'auto' });
		expect(error?.message).toMatch(message);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

describe('base64 input', () => {
	test('raw base64 image converted to png', async () => {
		const { items } = await runUpload({ inputType: 'base64', base64: (await makeImage('webp', 40, 20)).toString('base64'), mediaType: 'auto', outputFormat: 'png' });
		const hosted = await fetchHosted(items[0]!.json.imageUrl);
		expect(hosted.contentType).toBe('image/png');
	});

	test('a data URI video', async () => {
		const bytes = makeMov(2000);
		const { items } = await runUpload({ inputType: 'base64', base64: `data:video/quicktime;base64,${bytes.toString('base64')}`, mediaType: 'video' });
		expect((await fetchHosted(items[0]!.json.videoUrl)).bytes.equals(bytes)).toBe(true);
	});

	test.each([
		['not base64 at all!', 'auto', /Parameter 'base64' of item 0: /],
		['={{ "  " }}', 'auto', /Parameter 'base64' of item 0: 'base64' is empty/],
		['https://example.com/a.png', 'auto', /Parameter 'base64' of item 0: 'base64' holds a URL/],
		[makePdf().toString('base64'), 'auto', /neither a supported image/],
		[makeMp4().toString('base64'), 'image', /Parameter 'mediaType' of item 0: expected an image/],
	])('bad input %#: fails before any request', async (base64, mediaType, message) => {
		const { error } = await runUpload({ inputType: 'base64', base64, mediaType });
		expect(error?.message).toMatch(message);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

test('an unknown input type fails with a clear error before any request', async () => {
	const { error } = await runUpload({ inputType: 'file', url: 'https://example.com/a.png', base64: 'aGVsbG8=', mediaType: 'auto' });
	expect(error?.name).toBe('NodeOperationError');
	expect(error?.message).toMatch(/Parameter 'inputType' of item 0: unknown input type "file"; use one of binary, url, base64/);
	expect(env.proxy.requests).toHaveLength(0);
});

test('continue on fail: the bad item becomes an error item, the good ones are hosted, order kept', async () => {
	const good = (await makeImage('png')).toString('base64');
	const seed = [{ json: { b64: good } }, { json: { b64: 'bad!' } }, { json: { b64: good } }];
	const { items, result } = await runUpload({ inputType: 'base64', base64: '={{ $json.b64 }}', mediaType: 'auto' }, seed, { onError: 'continueRegularOutput' });
	expect(result.error()).toBeUndefined();
	expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
	expect(items[0]!.json.imageUrl).toBeDefined();
	expect(String(items[1]!.json.error)).toMatch(/Parameter 'base64' of item 1/);
	expect(items[2]!.json.imageUrl).toBeDefined();
});

describe('Lifetime and Fit For: the fields sent with an upload', () => {
	const sentBody = () => JSON.parse(env.proxy.requests[0]!.json!) as Record<string, unknown>;

	test.each([
		['instagramFeed', { max_side: 1440, max_bytes: 8_000_000, output_format: 'jpg' }],
		['instagramStory', { max_side: 1920, max_bytes: 8_000_000, output_format: 'jpg' }],
		['facebook', { max_side: 2048, max_bytes: 4_000_000, output_format: 'jpg' }],
		['linkedIn', { max_side: 6000, max_bytes: 5_000_000, output_format: 'jpg' }],
		['x', { max_side: 4096, max_bytes: 5_000_000, output_format: 'jpg' }],
	])('%s overrides the output format and sets the platform’s limits', async (fitFor, fields) => {
		const png = (await makeImage('png')).toString('base64');
		await runUpload({ inputType: 'base64', base64: png, mediaType: 'auto', outputFormat: 'png', options: { fitFor, expiresIn: 3600 } });
		expect(sentBody()).toEqual({ image: png, expires_in: 3600, ...fields });
	});

	test('custom sends the given side and size (1 MB = 1,000,000 bytes) with the chosen output format', async () => {
		const png = (await makeImage('png')).toString('base64');
		await runUpload({ inputType: 'base64', base64: png, mediaType: 'image', outputFormat: 'webp', options: { fitFor: 'custom', maxSide: 512, maxSizeMb: 1.5 } });
		expect(sentBody()).toEqual({ image: png, output_format: 'webp', max_side: 512, max_bytes: 1_500_000 });
	});

	test('none, or no options at all: nothing but the file', async () => {
		const png = (await makeImage('png')).toString('base64');
		await runUpload({ inputType: 'base64', base64: png, mediaType: 'auto', options: { fitFor: 'none' } });
		expect(sentBody()).toEqual({ image: png });
	});

	test('a lifetime from an expression: seconds as text are sent as a number; anything else fails before sending', async () => {
		const png = (await makeImage('png')).toString('base64');
		await runUpload({ inputType: 'base64', base64: png, mediaType: 'auto', options: { expiresIn: '={{ "7200" }}' } });
		expect(sentBody()).toEqual({ image: png, expires_in: 7200 });
		env.proxy.reset();
		const { error } = await runUpload({ inputType: 'base64', base64: png, mediaType: 'auto', options: { expiresIn: '={{ "a day" }}' } });
		expect(error?.message).toMatch(/Parameter 'expiresIn' of item 0: the lifetime must be a number of seconds; got "a day"/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('a video keeps only its lifetime: Fit For applies to images', async () => {
		const mov = makeMov(2000).toString('base64');
		await runUpload({ inputType: 'base64', base64: mov, mediaType: 'auto', outputFormat: 'jpg', options: { fitFor: 'instagramFeed', expiresIn: 21600 } });
		expect(sentBody()).toEqual({ video: mov, expires_in: 21600 });
	});
});

describe('Get Info and Delete: the file named by id or URL', () => {
	test.each([
		['getInfo', 'AbC_123-xyz', 'GET', '/v1/files/AbC_123-xyz'],
		['getInfo', 'https://cdn.example.com/files/AbC_123-xyz.png', 'GET', '/v1/files/AbC_123-xyz'],
		['delete', 'http://127.0.0.1:8080/files/AbC_123-xyz.mp4', 'DELETE', '/v1/files/AbC_123-xyz'],
	])('%s %s → %s %s', async (operation, fileId, method, path) => {
		await runUpload({ operation, fileId });
		expect(env.proxy.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`${method} ${path}`]);
	});

	test.each([
		['={{ "" }}', /Parameter 'fileId' of item 0: 'fileId' is empty/],
		['https://example.com/pictures/cat.png', /is not the URL of a hosted file/],
		['../../v1/usage', /is not a file id/],
		['abc.png', /is not a file id/],
		['https://cdn.example.com/files/%E0%A4%A.png', /^Parameter 'fileId' of item 0: .*is not the URL of a hosted file/],
		['https://cdn.example.com/files/abc%ZZ.png', /^Parameter 'fileId' of item 0: .*is not the URL of a hosted file/],
	])('%j fails before any request', async (fileId, message) => {
		const { error } = await runUpload({ operation: 'delete', fileId });
		expect(error?.message).toMatch(message);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('an unknown operation is refused by name', async () => {
		const { error } = await runUpload({ operation: 'rename', fileId: 'abc' });
		expect(error?.message).toMatch(/Parameter 'operation': unknown operation "rename"; use one of upload, getInfo, delete, verify/);
		expect(env.proxy.requests).toHaveLength(0);
	});
});
