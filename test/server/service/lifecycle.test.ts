/**
 * The process around the routes: SIGTERM drains in-flight requests (a slow upload still succeeds
 * and is there after a restart, new connections are refused or 503), and /healthz reports a usage
 * ledger that cannot write, which keeps every entry and writes it once the database takes writes again.
 */
import { readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer } from '../../helpers/server';
import { call, eventually, postJson } from '../support/http';
import { makeMp4, patterned } from '../support/media';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('SIGTERM mid-upload: the upload completes with 200, new connections are turned away, the file survives a restart', async () => {
	const first = await startServer();
	const boundary = 'drain-boundary-5';
	const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
	const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
	const chunks = [makeMp4(8 * 1024), ...Array.from({ length: 8 }, (_, index) => patterned(64 * 1024, index + 1))];
	const bodyLength = chunks.reduce((sum, chunk) => sum + chunk.length, 0);

	let terminated!: () => void;
	const signalled = new Promise<void>((resolve) => (terminated = resolve));
	const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
		const request = http.request(`${first.baseUrl}/uploads`, {
			method: 'POST',
			headers: {
				authorization: `Bearer ${first.apiKey}`,
				'content-type': `multipart/form-data; boundary=${boundary}`,
				'content-length': head.length + bodyLength + tail.length,
			},
		});
		request.on('error', reject);
		request.on('response', (response) => {
			let body = '';
			response.on('data', (chunk: Buffer) => (body += chunk.toString()));
			response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
		});
		void (async () => {
			request.write(head);
			for (const [index, chunk] of chunks.entries()) {
				request.write(chunk);
				if (index === 2) {
					// The server is writing the file now (its temp file exists): stop it mid-upload.
					await eventually(() => readdirSync(join(first.dataDir, 'files')).some((name) => name.startsWith('.tmp-')), 5_000, 10);
					first.process.kill('SIGTERM');
					terminated();
					await sleep(100);
				}
				await sleep(60);
			}
			request.end(tail);
		})().catch(reject);
	});
	const exited = new Promise<number | null>((resolve) => first.process.once('exit', (code) => resolve(code)));

	// Probed only once the signal was sent (finding the temp file can take a while on a loaded machine).
	await signalled;
	await sleep(150);
	// Connecting anew after SIGTERM: refused (listener closed) or a 503, never served.
	const late = await fetch(`${first.origin}/healthz`).then(
		(response) => response.status,
		() => 'refused' as const,
	);
	expect([503, 'refused']).toContain(late);

	const upload = await answered;
	expect(upload.status).toBe(200);
	const { videoUrl } = JSON.parse(upload.body) as { videoUrl: string };
	expect(await exited).toBe(0);

	const second = await startServer({ dataDir: first.dataDir });
	try {
		const response = await fetch(videoUrl.replace(first.origin, second.origin));
		expect(response.status).toBe(200);
		expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.concat(chunks))).toBe(true);
	} finally {
		await second.stop({ removeData: true });
	}
});

test('a request that never finishes does not hold the shutdown beyond --drain-timeout-seconds', async () => {
	const server = await startServer({ args: ['--drain-timeout-seconds', '1'] });
	try {
		const request = http.request(`${server.baseUrl}/uploads`, {
			method: 'POST',
			headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', 'content-length': 1_000_000 },
		});
		request.on('error', () => undefined);
		request.write('{"video":"');
		await sleep(200);
		const exited = new Promise<number | null>((resolve) => server.process.once('exit', (code) => resolve(code)));
		const started = Date.now();
		server.process.kill('SIGTERM');
		expect(await exited).toBe(1);
		const took = Date.now() - started;
		expect(took).toBeGreaterThanOrEqual(900);
		expect(took).toBeLessThan(5_000);
		expect(server.output()).toMatch(/requests still running after 1 s; exiting anyway/);
		request.destroy();
	} finally {
		await server.stop({ removeData: true });
	}
});

test('a usage ledger that cannot be written: /healthz says degraded, nothing is lost, and it recovers when repaired', async () => {
	const server = await startServer();
	// Another process takes the ledger's table away: its writes fail while every other write (the
	// inline image is stored like a hosted one) goes on. A lock held on the whole database would stop
	// those too, and the generation would answer 503 database_busy.
	const holder = new Database(join(server.dataDir, 'imagegen.db'));
	try {
		holder.exec('ALTER TABLE usage_lines RENAME TO usage_lines_away');
		const generated = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'kept through a failure', response_format: 'b64_json' });
		expect(generated.status).toBe(200);

		expect(await eventually(async () => (await call(server, '/healthz', { auth: null })).body.status === 'degraded', 30_000)).toBe(true);
		const degraded = await call(server, '/healthz', { auth: null });
		expect(degraded.status).toBe(200);
		// Status and counts only: the reason (with the data dir's path) is for the log, not this public answer.
		expect(degraded.body).toEqual({ status: 'degraded', ledger: { status: 'degraded', pending: 1 } });
		expect(JSON.stringify(degraded.body)).not.toContain(server.dataDir);
		expect(server.output()).toMatch(/usage entries could not be written to the database; retrying/);
		expect(server.output()).toMatch(/no such table: usage_lines/);

		holder.exec('ALTER TABLE usage_lines_away RENAME TO usage_lines');
		expect(await eventually(async () => (await call(server, '/healthz', { auth: null })).body.status === 'ok', 30_000)).toBe(true);
		expect((await call(server, '/v1/usage')).body.total.images).toBe(1);

		// And it is the durable record: a restart reads it back.
		await server.stop();
		const again = await startServer({ dataDir: server.dataDir });
		try {
			expect((await call(again, '/v1/usage')).body.total.images).toBe(1);
		} finally {
			await again.stop();
		}
	} finally {
		holder.close();
		await server.stop({ removeData: true });
	}
}, 90_000);
