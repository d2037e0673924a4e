/**
 * The s3 driver through the real AWS SDK: the shared storage contract and presigned links against
 * s3rver (a real S3-protocol server on loopback), and, against a recording stand-in, the multipart
 * clean-up that s3rver does not implement (listing and aborting incomplete uploads).
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PART_SIZE, QUEUE_SIZE, S3BucketUnreachableError, S3ObjectStorage } from '../../../server/src/storage/s3-object-storage';
import { PartBuffers } from '../../../server/src/storage/s3-part-writer';
import { chunked, failingAfter, patterned, readAll, stallingAfter } from '../support/byte-streams';
import { describeObjectStorageContract } from '../support/object-storage-contract';
import { startRecordingS3, type RecordingS3 } from '../support/recording-s3';
import { setEnvironment, startS3rver, type S3TestServer } from '../support/s3';

let s3: S3TestServer;
beforeAll(async () => {
	s3 = await startS3rver('imagegen-driver-test');
});
afterAll(async () => {
	await s3?.stop();
});

describeObjectStorageContract('s3 (s3rver)', async () => S3ObjectStorage.open(s3.options()));

/** The storage's part-buffer pool, remembering every buffer it handed out: how many a write really used. */
class CountingPartBuffers extends PartBuffers {
	private readonly handedOut = new Set<Buffer>();

	override take(): Buffer {
		const buffer = super.take();
		this.handedOut.add(buffer);
		return buffer;
	}

	distinct(): Set<Buffer> {
		return new Set(this.handedOut);
	}
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
	const server = http.createServer().listen(0, '127.0.0.1');
	await once(server, 'listening');
	const { port } = server.address() as AddressInfo;
	await new Promise((resolve) => server.close(resolve));
	return port;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
	for (const started = Date.now(); !condition(); ) {
		if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
}

describe('s3 driver on s3rver', () => {
	let storage: S3ObjectStorage;
	beforeAll(() => {
		storage = s3.storage();
	});
	afterAll(() => storage.close());

	describe('presigned GET links', () => {
		it('fetch the object over HTTP with the given type and file name, valid no longer than the file', async () => {
			const bytes = patterned(70_000, 21);
			await storage.write('presigned.png', chunked(bytes), { contentType: 'image/png' });
			const expiresAt = new Date(Date.now() + 3_600_500);
			const signedAt = Date.now();
			const cacheControl = 'public, max-age=3600, must-revalidate';
			const url = new URL(await storage.presignGet('presigned.png', { expiresAt, contentType: 'image/png', fileName: 'presigned.png', cacheControl }));

			expect(url.origin).toBe(s3.endpoint);
			expect(url.pathname).toBe(`/${s3.bucket}/presigned.png`);
			expect(url.searchParams.get('X-Amz-Credential')).toMatch(/^S3RVER\//);
			const expiresIn = Number(url.searchParams.get('X-Amz-Expires'));
			expect(expiresIn).toBeLessThanOrEqual(Math.floor((expiresAt.getTime() - signedAt) / 1000));
			expect(expiresIn).toBeGreaterThanOrEqual(3599);

			const response = await fetch(url);
			expect(response.status).toBe(200);
			expect(response.headers.get('content-type')).toBe('image/png');
			expect(response.headers.get('content-disposition')).toBe('inline; filename="presigned.png"');
			// The bucket answers the redirect with our cache lifetime, which never reaches past the expiry.
			expect(response.headers.get('cache-control')).toBe(cacheControl);
			expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
		});

		it('carry a non-ASCII file name in filename* and serve Range requests', async () => {
			const bytes = patterned(10_000, 22);
			await storage.write('range.webp', chunked(bytes), { contentType: 'image/webp' });
			const url = await storage.presignGet('range.webp', { expiresAt: new Date(Date.now() + 60_000), contentType: 'image/webp', fileName: 'été "1".webp' });
			const response = await fetch(url, { headers: { range: 'bytes=100-199' } });
			expect(response.status).toBe(206);
			expect(response.headers.get('content-disposition')).toBe(`inline; filename="_t_ _1_.webp"; filename*=UTF-8''%C3%A9t%C3%A9%20%221%22.webp`);
			expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes.subarray(100, 200));
		});

		it('last at most 7 days (S3 refuses longer) and at least 1 second', async () => {
			const expiresIn = async (expiresAt: Date) =>
				Number(new URL(await storage.presignGet('presigned.png', { expiresAt, contentType: 'image/png', fileName: 'a.png' })).searchParams.get('X-Amz-Expires'));
			expect(await expiresIn(new Date(Date.now() + 30 * 24 * 3600_000))).toBe(7 * 24 * 3600);
			expect(await expiresIn(new Date(Date.now() + 2_900))).toBeLessThanOrEqual(2);
			expect(await expiresIn(new Date(Date.now() - 60_000))).toBe(1);
		});

		it('stop working once expired', async () => {
			await storage.write('expiring.png', chunked(patterned(100)), { contentType: 'image/png' });
			// Two seconds: the signing time is whole seconds, so the link is good for at least one more.
			const url = await storage.presignGet('expiring.png', { expiresAt: new Date(Date.now() + 2_500), contentType: 'image/png', fileName: 'expiring.png' });
			expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('2');
			expect((await fetch(url)).status).toBe(200);
			await new Promise((resolve) => setTimeout(resolve, 3_100));
			expect((await fetch(url)).status).toBe(403);
		});
	});

	describe('prefix', () => {
		it('puts every key under the prefix, with a / added when missing', async () => {
			const tenant = s3.storage({ prefix: 'tenant-a' });
			const slashed = s3.storage({ prefix: '/tenant-b/' });
			await tenant.write('object.bin', chunked(patterned(500, 1)), { contentType: 'application/octet-stream' });
			await slashed.write('object.bin', chunked(patterned(500, 2)), { contentType: 'application/octet-stream' });
			expect(await readAll((await storage.read('tenant-a/object.bin'))!)).toEqual(patterned(500, 1));
			expect(await readAll((await storage.read('tenant-b/object.bin'))!)).toEqual(patterned(500, 2));
			expect(await storage.read('object.bin')).toBeNull();
			await tenant.delete(['object.bin']);
			expect(await storage.read('tenant-a/object.bin')).toBeNull();
			expect(await slashed.read('object.bin')).not.toBeNull();
			await Promise.all([tenant.close(), slashed.close()]);
		});
	});

	describe('removeIncomplete', () => {
		it('tolerates that s3rver does not implement listing or aborting multipart uploads', async () => {
			// Shown first, so this test proves the tolerance rather than a store that lists nothing.
			const list = await fetch(`${s3.endpoint}/${s3.bucket}?uploads&prefix=left.mp4`);
			expect(list.status).toBe(501);
			expect(await list.text()).toContain('<Code>NotImplemented</Code>');
			const started = await fetch(`${s3.endpoint}/${s3.bucket}/left.mp4?uploads`, { method: 'POST' });
			expect(started.status).toBe(200);

			await expect(storage.removeIncomplete('left.mp4')).resolves.toBeUndefined();
		});

		it('deletes a finished object whose metadata was never published', async () => {
			await storage.write('orphan.png', chunked(patterned(4000)), { contentType: 'image/png' });
			await storage.removeIncomplete('orphan.png');
			expect(await storage.read('orphan.png')).toBeNull();
		});
	});

	describe('start-up check', () => {
		it('opens a bucket that exists, ready to write and read', async () => {
			const opened = await S3ObjectStorage.open(s3.options());
			try {
				expect(opened).toBeInstanceOf(S3ObjectStorage);
				await expect(opened.ping(AbortSignal.timeout(10_000))).resolves.toBeUndefined();
				expect(await opened.write('opened.png', chunked(patterned(100, 3)), { contentType: 'image/png' })).toBe(100);
				expect(await readAll((await opened.read('opened.png'))!)).toEqual(patterned(100, 3));
			} finally {
				await opened.close();
			}
		});

		it('reads from a bucket that does not exist fail instead of answering "no such file"', async () => {
			const missing = s3.storage({ bucket: 'no-such-bucket' });
			await expect(missing.read('a.png')).rejects.toMatchObject({ name: 'NoSuchBucket' });
			await missing.close();
		});

		it('names --s3-bucket when the bucket does not exist', async () => {
			const error = await S3ObjectStorage.open(s3.options({ bucket: 'no-such-bucket' })).catch((caught: unknown) => caught);
			expect(error).toBeInstanceOf(S3BucketUnreachableError);
			expect((error as Error).message).toBe(`S3 bucket 'no-such-bucket' (--s3-bucket) is not usable at ${s3.endpoint} (--s3-endpoint, region us-east-1): no such bucket (HTTP 404)`);
		});

		it('names --s3-endpoint when nothing answers there, without the URL credentials', async () => {
			const port = await closedPort();
			const error = await S3ObjectStorage.open(s3.options({ endpoint: `http://someone:hunter2@127.0.0.1:${port}/` })).catch((caught: unknown) => caught);
			expect(error).toBeInstanceOf(S3BucketUnreachableError);
			const message = (error as Error).message;
			expect(message).toContain(`'imagegen-driver-test' (--s3-bucket) is not usable at http://127.0.0.1:${port} (--s3-endpoint, region us-east-1)`);
			expect(message).toContain('ECONNREFUSED');
			expect(message).not.toContain('hunter2');
		});
	});
});

describe('s3 driver against a recording stand-in S3', () => {
	let standIn: RecordingS3;
	let storage: S3ObjectStorage;
	beforeAll(async () => {
		standIn = await startRecordingS3();
		storage = new S3ObjectStorage({ bucket: standIn.bucket, endpoint: standIn.endpoint, region: 'us-east-1', forcePathStyle: true, prefix: 'p' });
	});
	afterAll(async () => {
		await storage?.close();
		await standIn?.close();
	});
	beforeEach(() => {
		standIn.calls.length = 0;
		standIn.uploads = [];
		standIn.pageSize = 1000;
	});

	it('says access is denied when the store refuses the credentials, and never prints them', async () => {
		// A wrong secret key: AWS answers HeadBucket with a bare 403 (s3rver does not check signatures).
		const restore = setEnvironment({ AWS_SECRET_ACCESS_KEY: 'wrong-secret-1234567890' });
		try {
			standIn.failNext('HeadBucket', 403, 'Forbidden');
			const error = await S3ObjectStorage.open({ bucket: standIn.bucket, endpoint: standIn.endpoint, region: 'eu-west-1', forcePathStyle: true, prefix: '' }).catch(
				(caught: unknown) => caught,
			);
			expect(error).toBeInstanceOf(S3BucketUnreachableError);
			expect((error as Error).message).toBe(
				`S3 bucket '${standIn.bucket}' (--s3-bucket) is not usable at ${standIn.endpoint} (--s3-endpoint, region eu-west-1): access denied (HTTP 403): check the credentials the AWS SDK finds (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role) and that they may use this bucket`,
			);
			expect(standIn.callsOf('HeadBucket')[0]!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=S3RVER\//);
		} finally {
			restore();
		}
	});

	describe('removeIncomplete', () => {
		it("lists the key's incomplete uploads page by page and aborts each, then deletes the object", async () => {
			standIn.uploads = [
				{ key: 'p/a.png', uploadId: 'u1' },
				{ key: 'p/a.png', uploadId: 'u2' },
				{ key: 'p/a.png2', uploadId: 'u3' },
				{ key: 'p/a.png', uploadId: 'u4' },
				{ key: 'p/b.png', uploadId: 'u5' },
			];
			standIn.pageSize = 2;
			await storage.removeIncomplete('a.png');

			const lists = standIn.callsOf('ListMultipartUploads');
			expect(lists.map((call) => call.query.get('prefix'))).toEqual(['p/a.png', 'p/a.png']);
			expect(lists[1]!.query.get('key-marker')).toBe('p/a.png');
			expect(lists[1]!.query.get('upload-id-marker')).toBe('u2');
			expect(standIn.callsOf('AbortMultipartUpload').map((call) => [call.key, call.query.get('uploadId')])).toEqual([
				['p/a.png', 'u1'],
				['p/a.png', 'u2'],
				['p/a.png', 'u4'],
			]);
			expect(standIn.uploads).toEqual([
				{ key: 'p/a.png2', uploadId: 'u3' },
				{ key: 'p/b.png', uploadId: 'u5' },
			]);
			expect(standIn.callsOf('DeleteObject').map((call) => call.key)).toEqual(['p/a.png']);
		});

		it('tolerates an upload that another replica aborted first (NoSuchUpload)', async () => {
			standIn.uploads = [
				{ key: 'p/c.png', uploadId: 'u1' },
				{ key: 'p/c.png', uploadId: 'u2' },
			];
			standIn.failNext('AbortMultipartUpload', 404, 'NoSuchUpload');
			await storage.removeIncomplete('c.png');
			expect(standIn.callsOf('AbortMultipartUpload')).toHaveLength(2);
			expect(standIn.uploads).toEqual([{ key: 'p/c.png', uploadId: 'u1' }]);
			expect(standIn.callsOf('DeleteObject')).toHaveLength(1);
		});

		it('tolerates NotImplemented and MethodNotAllowed, and still deletes the object', async () => {
			standIn.failNext('ListMultipartUploads', 501, 'NotImplemented');
			await storage.removeIncomplete('d.png');
			expect(standIn.callsOf('DeleteObject').map((call) => call.key)).toEqual(['p/d.png']);

			standIn.uploads = [{ key: 'p/e.png', uploadId: 'u1' }];
			standIn.failNext('AbortMultipartUpload', 405, 'MethodNotAllowed');
			await storage.removeIncomplete('e.png');
			expect(standIn.callsOf('DeleteObject').map((call) => call.key)).toEqual(['p/d.png', 'p/e.png']);
		});

		it('does not hide a refusal: AccessDenied on the listing fails', async () => {
			standIn.failNext('ListMultipartUploads', 403, 'AccessDenied');
			await expect(storage.removeIncomplete('f.png')).rejects.toMatchObject({ name: 'AccessDenied' });
		});
	});

	describe('write', () => {
		it('sends a small file in one PutObject with its content type', async () => {
			const bytes = patterned(1000);
			expect(await storage.write('small.webp', chunked(bytes), { contentType: 'image/webp' })).toBe(1000);
			const [put] = standIn.callsOf('PutObject');
			expect(put).toMatchObject({ key: 'p/small.webp', headers: expect.objectContaining({ 'content-type': 'image/webp' }) });
			expect(standIn.callsOf('CreateMultipartUpload')).toHaveLength(0);
		});

		it('sends a large file as a multipart upload in parts of PART_SIZE, with its content type', async () => {
			const size = 2 * PART_SIZE + 777;
			expect(await storage.write('large.mp4', chunked(patterned(size)), { contentType: 'video/mp4' })).toBe(size);
			expect(standIn.callsOf('CreateMultipartUpload')).toEqual([expect.objectContaining({ key: 'p/large.mp4', headers: expect.objectContaining({ 'content-type': 'video/mp4' }) })]);
			expect(standIn.callsOf('UploadPart').map((call) => call.query.get('partNumber')).sort()).toEqual(['1', '2', '3']);
			expect(standIn.callsOf('CompleteMultipartUpload')).toHaveLength(1);
			expect(standIn.callsOf('AbortMultipartUpload')).toHaveLength(0);
			expect(standIn.uploads).toEqual([]);
		});

		it('aborted mid-stream, aborts the multipart upload before it rejects', async () => {
			const source = stallingAfter(patterned(PART_SIZE + 5000));
			const controller = new AbortController();
			const outcome = storage.write('aborted.mp4', source.stream, { contentType: 'video/mp4', signal: controller.signal }).then(
				() => 'resolved',
				(error: unknown) => error,
			);
			await waitFor(() => standIn.callsOf('UploadPart').length === 1, 'the first part');
			const reason = new Error('client went away');
			controller.abort(reason);
			expect(await outcome).toBe(reason);

			const [created] = standIn.callsOf('CreateMultipartUpload');
			const uploadId = standIn.callsOf('UploadPart')[0]!.query.get('uploadId');
			expect(created?.key).toBe('p/aborted.mp4');
			expect(standIn.callsOf('AbortMultipartUpload').map((call) => [call.key, call.query.get('uploadId')])).toEqual([['p/aborted.mp4', uploadId]]);
			expect(standIn.callsOf('CompleteMultipartUpload')).toHaveLength(0);
			expect(standIn.uploads).toEqual([]);
		});

		it('whose source fails after a part, aborts the multipart upload and rejects with the source error', async () => {
			const failure = new Error('disk read failed');
			await expect(storage.write('broken.mp4', failingAfter(patterned(PART_SIZE + 5000), failure), { contentType: 'video/mp4' })).rejects.toBe(failure);
			expect(standIn.callsOf('AbortMultipartUpload')).toHaveLength(1);
			expect(standIn.callsOf('CompleteMultipartUpload')).toHaveLength(0);
			expect(standIn.uploads).toEqual([]);
		});

		it('rejects with the original failure even when the store refuses the abort', async () => {
			standIn.failNext('AbortMultipartUpload', 501, 'NotImplemented');
			const failure = new Error('source broke');
			await expect(storage.write('refused.mp4', failingAfter(patterned(PART_SIZE + 1), failure), { contentType: 'video/mp4' })).rejects.toBe(failure);
			expect(standIn.callsOf('AbortMultipartUpload')).toHaveLength(1);
		});
		it('whose part the store refuses, rejects with that answer and aborts the upload without waiting for the source to end', async () => {
			standIn.failNext('UploadPart', 403, 'AccessDenied');
			// Every byte delivered, then the source neither ends nor fails: a client that went quiet.
			const source = stallingAfter(patterned(2 * PART_SIZE + 5));
			const error = await storage.write('refused-part.mp4', source.stream, { contentType: 'video/mp4' }).catch((caught: unknown) => caught);
			expect(error).toMatchObject({ name: 'AccessDenied' });
			expect(standIn.callsOf('AbortMultipartUpload')).toHaveLength(1);
			expect(standIn.callsOf('CompleteMultipartUpload')).toHaveLength(0);
			expect(standIn.uploads).toEqual([]);
			source.stream.destroy();
		});

		it('reuses its part buffers: a write of many parts holds QUEUE_SIZE + 1 of them, and the next write allocates none', async () => {
			const buffers = new CountingPartBuffers(PART_SIZE, QUEUE_SIZE + 1);
			const fresh = new S3ObjectStorage({ bucket: standIn.bucket, endpoint: standIn.endpoint, region: 'us-east-1', forcePathStyle: true, prefix: 'p', partBuffers: buffers });
			try {
				const size = 12 * PART_SIZE + 3;
				expect(await fresh.write('many-parts.mp4', chunked(patterned(size)), { contentType: 'video/mp4' })).toBe(size);
				// Its own parts: a part of the previous test's refused upload may still arrive late (S3 refuses it, the upload being aborted).
				expect(standIn.callsOf('UploadPart').filter((call) => call.key === 'p/many-parts.mp4')).toHaveLength(13);
				const used = buffers.distinct();
				expect(used.size).toBeGreaterThan(0);
				expect(used.size).toBeLessThanOrEqual(QUEUE_SIZE + 1);
				await fresh.write('again.mp4', chunked(patterned(3 * PART_SIZE)), { contentType: 'video/mp4' });
				expect(buffers.distinct()).toEqual(used);
			} finally {
				await fresh.close();
			}
		});
	});

	describe('delete', () => {
		it('sends quiet DeleteObjects requests of at most 1000 keys', async () => {
			const keys = Array.from({ length: 2500 }, (_, index) => `k${index}.png`);
			await storage.delete(keys);
			const requests = standIn.callsOf('DeleteObjects');
			expect(requests.map((call) => call.bodyText.match(/<Key>/g)?.length)).toEqual([1000, 1000, 500]);
			for (const request of requests) expect(request.bodyText).toContain('<Quiet>true</Quiet>');
			expect(requests[0]!.bodyText).toContain('<Key>p/k0.png</Key>');
		});

		it('ignores keys reported missing and fails on keys it could not delete', async () => {
			standIn.deleteErrors = [{ key: 'p/gone.png', code: 'NoSuchKey' }];
			await storage.delete(['gone.png']);
			standIn.deleteErrors = [
				{ key: 'p/gone.png', code: 'NoSuchKey' },
				{ key: 'p/locked.png', code: 'AccessDenied' },
			];
			await expect(storage.delete(['gone.png', 'locked.png'])).rejects.toThrow("S3 did not delete 1 of 2 objects; the first, 'p/locked.png': AccessDenied AccessDenied");
		});
	});
});
