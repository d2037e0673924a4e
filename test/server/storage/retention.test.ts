/** Expiry: 404 the moment a file expires, bytes removed by the sweeper, restarts keep live files. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../../helpers/server';
import { download, eventually, postJson } from '../support/http';
import { makeImage } from '../support/media';

const filesIn = (dataDir: string) => readdirSync(join(dataDir, 'files'));

describe('retention', () => {
	it('with --retention-seconds 2 a file becomes 404 and its bytes leave the disk', async () => {
		const server = await startServer({ args: ['--retention-seconds', '2'] });
		try {
			const png = await makeImage('png');
			const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64') });
			const name = answer.body.imageUrl.split('/').pop() as string;
			const id = name.split('.')[0]!;
			expect(Date.parse(answer.body.expiresAt) - Date.now()).toBeLessThanOrEqual(2_000);
			expect((await download(answer.body.imageUrl)).status).toBe(200);
			expect(filesIn(server.dataDir)).toEqual([name]);

			expect(await eventually(async () => (await download(answer.body.imageUrl)).status === 404, 5_000, 50)).toBe(true);
			// 404 must come no later than the expiry time it announced (plus a little for the request itself).
			expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(answer.body.expiresAt) - 50);
			expect(await eventually(() => !filesIn(server.dataDir).some((entry) => entry.startsWith(id)), 8_000)).toBe(true);
		} finally {
			await server.stop({ removeData: true });
		}
	});

	it('a restart keeps unexpired files (same URL path, same bytes) and still honours their expiry', async () => {
		const first = await startServer({ args: ['--retention-seconds', '3600'] });
		const png = await makeImage('png');
		const answer = await postJson(first, '/v1/uploads', { image: png.toString('base64') });
		const path = new URL(answer.body.imageUrl).pathname;
		await first.stop();

		const second = await startServer({ dataDir: first.dataDir, args: ['--retention-seconds', '3600'] });
		try {
			const file = await download(`${second.origin}${path}`);
			expect(file.status).toBe(200);
			expect(file.bytes.equals(png)).toBe(true);
			const maxAge = Number(/max-age=(\d+)/.exec(file.headers.get('cache-control') ?? '')?.[1]);
			expect(maxAge).toBeLessThanOrEqual(3600);
		} finally {
			await second.stop({ removeData: true });
		}
	});

	it('expiry is fixed when stored: a restart with a shorter retention does not extend or shorten it', async () => {
		const first = await startServer({ args: ['--retention-seconds', '1'] });
		const answer = await postJson(first, '/v1/uploads', { image: (await makeImage('png')).toString('base64') });
		await first.stop();
		await new Promise((resolve) => setTimeout(resolve, 1_100));
		const second = await startServer({ dataDir: first.dataDir, args: ['--retention-seconds', '86400'] });
		try {
			expect((await download(`${second.origin}${new URL(answer.body.imageUrl).pathname}`)).status).toBe(404);
			expect(await eventually(() => filesIn(second.dataDir).length === 0, 5_000)).toBe(true);
			expect(existsSync(join(second.dataDir, 'files'))).toBe(true);
		} finally {
			await second.stop({ removeData: true });
		}
	});
});
