/**
 * The hosting features on S3 storage (s3rver on loopback), over real HTTP: fitting reads the staged
 * image back from the bucket, so does validating an upload's own manifest, a delete removes the
 * object, an idempotent upload replays, an inline generation is sent and replayed from the bucket,
 * and `--file-delivery redirect` still answers 302 to a presigned URL while the file exists.
 */
import sharp from 'sharp';
import { startServer, type RunningServer } from '../../helpers/server';
import { call, download, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';
import { S3RVER_CREDENTIALS, startS3rver, type S3TestServer } from '../support/s3';

jest.setTimeout(60_000);

let s3: S3TestServer;
let proxy: RunningServer;
let redirect: RunningServer;

const s3Args = (prefix: string) => ['--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style', '--s3-prefix', prefix];
const env = { ...S3RVER_CREDENTIALS, AWS_REGION: 'us-east-1' };

beforeAll(async () => {
	s3 = await startS3rver();
	[proxy, redirect] = await Promise.all([
		startServer({ args: s3Args('proxy/'), env }),
		startServer({ args: [...s3Args('redirect/'), '--file-delivery', 'redirect'], env }),
	]);
});
afterAll(async () => {
	await Promise.all([proxy?.stop({ removeData: true }), redirect?.stop({ removeData: true })]);
	await s3?.stop();
});

const objectExists = async (prefix: string, url: string) => {
	const bytes = await s3.storage({ prefix }).read(url.split('/').pop()!);
	bytes?.destroy();
	return bytes !== null;
};

test('max_side and output_format: the image is fitted from the bucket and stored there', async () => {
	const answer = await uploadFile(proxy, await makeImage('png', 1000, 500), { output_format: 'webp', max_side: '200', expires_in: '120' });
	expect(answer.status).toBe(200);
	const file = await download(answer.body.imageUrl);
	const meta = await sharp(file.bytes).metadata();
	expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'webp', width: 200, height: 100 });
	expect(answer.body).toMatchObject({ mimeType: 'image/webp', sizeBytes: file.bytes.length });
	expect(Date.parse(answer.body.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
	expect(await objectExists('proxy/', answer.body.imageUrl)).toBe(true);
});

test("an upload's own manifest is read back from the bucket and validated before it is answered as kept", async () => {
	const generated = await postJson(proxy, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', output_format: 'jpeg' });
	const signed = Buffer.from(generated.body.data[0].b64_json, 'base64');
	const answer = await uploadFile(proxy, signed);
	expect(answer.body.provenance).toEqual({ c2pa: 'kept', digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia' });
	expect((await download(answer.body.imageUrl)).bytes.equals(signed)).toBe(true);
	// The same bytes, one of them changed after signing: the manifest no longer validates.
	const changed = Buffer.from(signed);
	changed[changed.length - 100]! ^= 0xff;
	expect((await uploadFile(proxy, changed)).body.provenance).toEqual({ c2pa: 'none', digital_source_type: null });
});

test('a delete removes the object from the bucket', async () => {
	const answer = await postJson(proxy, '/v1/uploads', { file: (await makeImage('png', 20, 20)).toString('base64') });
	expect(await objectExists('proxy/', answer.body.imageUrl)).toBe(true);
	expect((await call(proxy, `/v1/files/${answer.body.id}`, { method: 'DELETE' })).status).toBe(204);
	expect((await download(answer.body.imageUrl)).status).toBe(404);
	expect(await objectExists('proxy/', answer.body.imageUrl)).toBe(false);
});

test('an idempotent multipart upload replays byte for byte', async () => {
	const png = await makeImage('png', 30, 30);
	const send = async () => {
		const form = new FormData();
		form.append('file', new Blob([png]), 'a.png');
		const response = await fetch(`${proxy.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${proxy.apiKey}`, 'idempotency-key': 's3-upload-1' }, body: form });
		return { replayed: response.headers.get('idempotent-replayed'), body: await response.text() };
	};
	const first = await send();
	const second = await send();
	expect(second).toEqual({ replayed: 'true', body: first.body });
});

test('an idempotent inline generation is sent from the bucket, and replayed from it byte for byte', async () => {
	const send = async () => {
		const response = await fetch(`${proxy.baseUrl}/images/generations`, {
			method: 'POST',
			headers: { authorization: `Bearer ${proxy.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 's3-inline-1' },
			body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', seed: 5 }),
		});
		return { status: response.status, replayed: response.headers.get('idempotent-replayed'), length: response.headers.get('content-length'), body: await response.text() };
	};
	const first = await send();
	expect(first.status).toBe(200);
	expect(Number(first.length)).toBe(Buffer.byteLength(first.body));
	expect((await sharp(Buffer.from(JSON.parse(first.body).data[0].b64_json, 'base64')).metadata()).width).toBe(1024);
	expect(await send()).toEqual({ ...first, replayed: 'true' });
});

test('redirect delivery: 302 to a presigned URL that serves the bytes; after a delete, 404 without a redirect', async () => {
	const png = await makeImage('png', 24, 24);
	const answer = await postJson(redirect, '/v1/uploads', { file: png.toString('base64') });
	const first = await fetch(answer.body.imageUrl, { redirect: 'manual' });
	expect(first.status).toBe(302);
	expect(first.headers.get('cache-control')).toBe('no-store');
	expect(first.headers.get('x-robots-tag')).toBe('noindex');
	const location = first.headers.get('location')!;
	expect(location.startsWith(s3.endpoint)).toBe(true);
	expect((await download(location)).bytes.equals(png)).toBe(true);

	expect((await call(redirect, `/v1/files/${answer.body.id}`, { method: 'DELETE' })).status).toBe(204);
	const after = await fetch(answer.body.imageUrl, { redirect: 'manual' });
	expect(after.status).toBe(404);
	expect(after.headers.get('location')).toBeNull();
	expect((await download(location)).status).toBe(404);
});
