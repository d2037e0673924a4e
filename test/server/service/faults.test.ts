/**
 * Faults at the edges of the file host: a process killed mid-upload, and the sweeper deleting
 * files that clients are reading. (A full disk is in storage/store.test.ts, client aborts in
 * uploads/upload-limits.test.ts, hanging and failing providers in generation/providers.test.ts.)
 */
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';
import { download, eventually, postJson } from '../support/http';
import { makeImage, makeMp4, patterned } from '../support/media';

const filesIn = (server: RunningServer) => {
	const directory = join(server.dataDir, 'files');
	return existsSync(directory) ? readdirSync(directory) : [];
};

test('SIGKILL in the middle of a large upload: after a restart no URL serves it and no temp file is left', async () => {
	const first = await startServer();
	const kept = await postJson(first, '/v1/uploads', { image: (await makeImage('png')).toString('base64') });
	expect(kept.status).toBe(200);

	const boundary = 'fault-boundary-31';
	const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
	const request = http.request(`${first.baseUrl}/uploads`, {
		method: 'POST',
		headers: { authorization: `Bearer ${first.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + 200 * 1024 * 1024 },
	});
	request.on('error', () => undefined);
	request.write(head);
	request.write(makeMp4(1024));
	const chunk = patterned(1024 * 1024);
	for (let sent = 0; sent < 30; sent++) {
		if (!request.write(chunk)) await new Promise((resolve) => request.once('drain', resolve));
	}
	expect(await eventually(() => filesIn(first).some((name) => name.startsWith('.tmp-')))).toBe(true);
	await first.stop({ signal: 'SIGKILL' });
	request.destroy();
	expect(filesIn(first).some((name) => name.startsWith('.tmp-'))).toBe(true);

	const second = await startServer({ dataDir: first.dataDir });
	try {
		expect(filesIn(second).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
		const keptName = String(kept.body.imageUrl).split('/').pop()!;
		expect(filesIn(second)).toEqual([keptName]);
		expect((await download(kept.body.imageUrl.replace(first.origin, second.origin))).status).toBe(200);
	} finally {
		await second.stop({ removeData: true });
	}
});

test('the sweeper deletes expiring files while 20 clients read them: only 200s and JSON 404s, never a 5xx', async () => {
	const server = await startServer({ args: ['--retention-seconds', '1'] });
	try {
		const image = (await makeImage('png', 200, 200)).toString('base64');
		const urls = await Promise.all(
			Array.from({ length: 20 }, async () => (await postJson(server, '/v1/uploads', { image })).body.imageUrl as string),
		);
		const statuses = new Map<number, number>();
		const deadline = Date.now() + 3_000;
		await Promise.all(
			urls.map(async (url) => {
				while (Date.now() < deadline) {
					const response = await fetch(url, { headers: { range: 'bytes=0-' } });
					const body = Buffer.from(await response.arrayBuffer());
					statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
					if (response.status === 404) expect(JSON.parse(body.toString()).error.code).toBeDefined();
				}
			}),
		);
		expect([...statuses.keys()].every((status) => status === 200 || status === 206 || status === 404)).toBe(true);
		expect(statuses.get(404)).toBeGreaterThan(0);
		expect(await eventually(() => filesIn(server).length === 0, 5_000)).toBe(true);
	} finally {
		await server.stop({ removeData: true });
	}
});
