/** Size limits for every upload form, and aborted uploads leaving nothing behind. */
import http from 'node:http';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { eventually, expectApiError, postJson, uploadFile } from '../support/http';
import { startMediaHost, type MediaHost } from '../support/media-host';
import { makeMp4 } from '../support/media';

let server: ServiceUnderTest;
let media: MediaHost;
const MIB = 1024 * 1024;

beforeAll(async () => {
	[server, media] = await Promise.all([startInProcessServer({ args: ['--max-upload-mb', '1', '--allow-private-urls'] }), startMediaHost()]);
});
afterAll(async () => {
	await Promise.all([server?.stop({ removeData: true }), media?.close()]);
});

const filesOnDisk = () => readdirSync(join(server.dataDir, 'files'));

describe('--max-upload-mb 1', () => {
	const big = makeMp4(MIB + 1000);
	const fits = makeMp4(MIB - 1000);

	it('413 naming the field for multipart, base64, data URI and fetched URLs', async () => {
		const before = filesOnDisk().length;
		expectApiError(await uploadFile(server, big), 413, 'file', /upload limit of 1 MiB/);
		expectApiError(await postJson(server, '/v1/uploads', { video: big.toString('base64') }), 413, 'video', /1 MiB/);
		expectApiError(await postJson(server, '/v1/uploads', { video: `data:video/mp4;base64,${big.toString('base64')}` }), 413, 'video');
		expectApiError(await postJson(server, '/v1/uploads', { video: media.put('/big.mp4', big) }), 413, 'video', /1 MiB/);
		// Without Content-Length the limit is enforced while streaming.
		media.put('/big-chunked.mp4', big, { 'transfer-encoding': 'chunked' });
		expectApiError(await postJson(server, '/v1/uploads', { video: `${media.origin}/big-chunked.mp4` }), 413, 'video');
		expect(await eventually(() => filesOnDisk().length === before, 2_000)).toBe(true);
	});

	it('files just under the limit are accepted in every form', async () => {
		expect((await uploadFile(server, fits)).status).toBe(200);
		expect((await postJson(server, '/v1/uploads', { video: fits.toString('base64') })).status).toBe(200);
		expect((await postJson(server, '/v1/uploads', { video: media.put('/fits.mp4', fits) })).status).toBe(200);
	});

	it('a client that aborts mid-upload leaves no file behind, and the service keeps serving', async () => {
		const before = filesOnDisk().length;
		const boundary = 'abortboundary';
		await new Promise<void>((resolve) => {
			const request = http.request(`${server.baseUrl}/uploads`, {
				method: 'POST',
				headers: {
					authorization: `Bearer ${server.apiKey}`,
					'content-type': `multipart/form-data; boundary=${boundary}`,
					'content-length': String(900_000),
				},
			});
			request.on('error', () => resolve());
			request.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\n`);
			request.write(fits.subarray(0, 300_000), () => {
				setTimeout(() => {
					request.destroy();
					resolve();
				}, 200);
			});
		});
		expect(await eventually(() => filesOnDisk().length === before, 5_000)).toBe(true);
		expect(filesOnDisk().filter((name) => name.startsWith('.tmp-'))).toEqual([]);
		expect((await uploadFile(server, makeMp4(100))).status).toBe(200);
	});
});
