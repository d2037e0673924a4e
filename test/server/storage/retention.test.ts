/**
 * Expiry: 404 the moment a file expires, bytes removed by the sweeper, restarts keep live files.
 * On a fake clock (support/clock.ts): an hour passes in no time, and "the moment" is exact.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startInProcessServer } from '../support/app';
import { useFakeClock } from '../support/clock';
import { call, download, eventually, postJson } from '../support/http';
import { makeImage } from '../support/media';

const filesIn = (dataDir: string) => readdirSync(join(dataDir, 'files'));
const ADMIN_KEY = 'admin-key-0123456789abcdef';

/**
 * Passes the sweeper has finished (its metric). A pass still under way when the clock reaches the
 * next one makes the sweeper skip that one, so a test waits for a pass before moving past the next.
 */
async function sweepsFinished(server: Parameters<typeof call>[0]): Promise<number> {
	const metrics = await call<string>(server, '/metrics', { auth: `Bearer ${ADMIN_KEY}` });
	return [...metrics.body.matchAll(/^imagegen_sweeps_total\{outcome="\w+"\} (\d+)$/gm)].reduce((sum, [, count]) => sum + Number(count), 0);
}

beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

describe('retention', () => {
	it('with --retention-seconds 60 a file becomes 404 at its expiry and its bytes leave the disk at the next sweep', async () => {
		const server = await startInProcessServer({ args: ['--retention-seconds', '60', '--admin-key', ADMIN_KEY] });
		try {
			const png = await makeImage('png');
			const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64') });
			const name = answer.body.imageUrl.split('/').pop() as string;
			const id = name.split('.')[0]!;
			const expiresAt = Date.parse(answer.body.expiresAt);
			expect(expiresAt - Date.now()).toBe(60_000);
			expect((await download(answer.body.imageUrl)).status).toBe(200);
			expect(filesIn(server.dataDir)).toEqual([name]);

			// The sweeps at 30 s and just before the expiry leave it alone; reads still find it.
			expect(await eventually(async () => (await sweepsFinished(server)) === 1, 8_000)).toBe(true);
			jest.advanceTimersByTime(expiresAt - Date.now() - 1);
			expect(await eventually(async () => (await sweepsFinished(server)) === 2, 8_000)).toBe(true);
			expect((await download(answer.body.imageUrl)).status).toBe(200);
			expect(filesIn(server.dataDir)).toEqual([name]);
			// 404 at the expiry time it announced, before any sweep ran.
			jest.advanceTimersByTime(1);
			expect((await download(answer.body.imageUrl)).status).toBe(404);
			// The sweep every min(60 s, retention / 2) removes the bytes.
			jest.advanceTimersByTime(30_000);
			expect(await eventually(() => !filesIn(server.dataDir).some((entry) => entry.startsWith(id)), 8_000)).toBe(true);
		} finally {
			await server.stop({ removeData: true });
		}
	});

	it('a restart keeps unexpired files (same URL path, same bytes) and still honours their expiry', async () => {
		const first = await startInProcessServer({ args: ['--retention-seconds', '3600'] });
		const png = await makeImage('png');
		const answer = await postJson(first, '/v1/uploads', { image: png.toString('base64') });
		const path = new URL(answer.body.imageUrl).pathname;
		await first.stop();

		jest.advanceTimersByTime(3_599_000);
		const second = await startInProcessServer({ dataDir: first.dataDir, args: ['--retention-seconds', '3600'] });
		try {
			const file = await download(`${second.origin}${path}`);
			expect(file.status).toBe(200);
			expect(file.bytes.equals(png)).toBe(true);
			// A cache keeps it no longer than the second it has left.
			const maxAge = Number(/max-age=(\d+)/.exec(file.headers.get('cache-control') ?? '')?.[1]);
			expect(maxAge).toBeLessThanOrEqual(1);
			jest.advanceTimersByTime(1_000);
			expect((await download(`${second.origin}${path}`)).status).toBe(404);
		} finally {
			await second.stop({ removeData: true });
		}
	});

	it('expiry is fixed when stored: a restart with a longer retention does not extend it', async () => {
		const first = await startInProcessServer({ args: ['--retention-seconds', '60'] });
		const answer = await postJson(first, '/v1/uploads', { image: (await makeImage('png')).toString('base64') });
		await first.stop();
		jest.advanceTimersByTime(60_000);
		const second = await startInProcessServer({ dataDir: first.dataDir, args: ['--retention-seconds', '86400'] });
		try {
			expect((await download(`${second.origin}${new URL(answer.body.imageUrl).pathname}`)).status).toBe(404);
			// The sweep at start removes the bytes.
			expect(await eventually(() => filesIn(second.dataDir).length === 0, 5_000)).toBe(true);
			expect(existsSync(join(second.dataDir, 'files'))).toBe(true);
		} finally {
			await second.stop({ removeData: true });
		}
	});
});
