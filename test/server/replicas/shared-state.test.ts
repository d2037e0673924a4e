/**
 * Three replicas on one PostgreSQL and one bucket: any replica serves any file (ranges,
 * validators, HEAD), reports the usage of all, and everything survives a restart of the fleet.
 */
import type { RunningServer } from '../../helpers/server';
import { call, download, postJson, uploadFile } from '../support/http';
import { makeMp4 } from '../support/media';
import { onReplica, startFleet, startInfrastructure, type Fleet, type FleetInfrastructure } from '../support/replicas';

let infrastructure: FleetInfrastructure;
let fleet: Fleet;
const video = makeMp4(300_000);

beforeAll(async () => {
	infrastructure = await startInfrastructure();
	fleet = await startFleet(infrastructure, { args: ['--prices', 'textimage-v2=0.05'] });
}, 120_000);
afterAll(async () => {
	await fleet?.stop();
	await infrastructure?.stop();
});

const generate = (replica: RunningServer, model: string) => postJson(replica, '/v1/images/generations', { model, prompt: 'a red lighthouse' });

describe('cross-replica reads', () => {
	let url: string;
	beforeAll(async () => {
		const answer = await uploadFile(fleet.replicas[0]!, video, {}, { fileName: 'clip.mp4', mimeType: 'video/mp4' });
		expect(answer.status).toBe(200);
		url = answer.body.videoUrl;
		expect(url).toMatch(/\/files\/[A-Za-z0-9_-]+\.mp4$/);
	});

	it('serves the upload of A on B and C, whole, as ranges and to HEAD', async () => {
		for (const replica of fleet.replicas.slice(1)) {
			const whole = await download(onReplica(url, replica));
			expect(whole.status).toBe(200);
			expect(whole.bytes.equals(video)).toBe(true);
			expect(whole.headers.get('content-type')).toBe('video/mp4');

			const range = await download(onReplica(url, replica), { headers: { range: 'bytes=1000-2999' } });
			expect(range.status).toBe(206);
			expect(range.headers.get('content-range')).toBe(`bytes 1000-2999/${video.length}`);
			expect(range.bytes.equals(video.subarray(1000, 3000))).toBe(true);

			const head = await fetch(onReplica(url, replica), { method: 'HEAD' });
			expect(head.status).toBe(200);
			expect(head.headers.get('content-length')).toBe(String(video.length));
			expect((await head.arrayBuffer()).byteLength).toBe(0);
		}
	});

	it('gives the same ETag everywhere and answers 304 to it on every replica', async () => {
		const etags = await Promise.all(fleet.replicas.map(async (replica) => (await download(onReplica(url, replica))).headers.get('etag')));
		expect(etags[0]).toMatch(/^"[^"]+"$/);
		expect(new Set(etags).size).toBe(1);
		for (const replica of fleet.replicas) {
			const response = await fetch(onReplica(url, replica), { headers: { 'if-none-match': etags[0]! } });
			expect(response.status).toBe(304);
		}
		const other = await fetch(onReplica(url, fleet.replicas[2]!), { headers: { 'if-none-match': '"not-it"' } });
		expect(other.status).toBe(200);
		await other.arrayBuffer();
	});

	it('serves a generation made on B from C', async () => {
		const answer = await generate(fleet.replicas[1]!, 'p-image');
		expect(answer.status).toBe(200);
		const image = await download(onReplica(answer.body.data[0].url, fleet.replicas[2]!));
		expect(image.status).toBe(200);
		expect(image.headers.get('content-type')).toBe('image/png');
		expect(image.bytes.subarray(1, 4).toString()).toBe('PNG');
	});

	it('answers 404 on every replica once the file has expired, before any sweep removed it', async () => {
		const upload = await uploadFile(fleet.replicas[0]!, video, {}, { fileName: 'clip.mp4', mimeType: 'video/mp4' });
		const id = /\/files\/([A-Za-z0-9_-]+)\./.exec(upload.body.videoUrl)![1];
		// The default retention sweeps once a minute; moving the expiry into the past leaves the row
		// and the bytes in place, so only the check on every read can answer 404.
		await fleet.query("UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1", [id]);
		for (const replica of fleet.replicas) {
			const response = await fetch(onReplica(upload.body.videoUrl, replica));
			expect(response.status).toBe(404);
			await response.arrayBuffer();
		}
		expect(await fleet.query('SELECT id FROM files WHERE id = $1', [id])).toHaveLength(1);
	});

	it('answers 404 on every replica for an id that no replica issued', async () => {
		for (const replica of fleet.replicas) {
			expect((await fetch(`${replica.origin}/files/AAAAAAAAAAAAAAAAAAAAAA.mp4`)).status).toBe(404);
		}
	});
});

describe('usage and restarts', () => {
	it('reports on every replica the generations made on all of them', async () => {
		const before = (await call(fleet.replicas[0]!, '/v1/usage')).body.total.images as number;
		const answers = await Promise.all([
			generate(fleet.replicas[0]!, 'p-image'),
			generate(fleet.replicas[1]!, 'p-image'),
			generate(fleet.replicas[2]!, 'textimage-v2'),
		]);
		expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
		const reports = await Promise.all(fleet.replicas.map((replica) => call(replica, '/v1/usage')));
		for (const report of reports) {
			expect(report.status).toBe(200);
			expect(report.body).toEqual(reports[0]!.body);
			expect(report.body.total.images).toBe(before + 3);
		}
		expect(reports[0]!.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ model: 'textimage-v2', images: 1, cost_usd: 0.05 })]));
	});

	it('keeps files and usage through a restart of every replica', async () => {
		const upload = await uploadFile(fleet.replicas[1]!, video, {}, { fileName: 'clip.mp4', mimeType: 'video/mp4' });
		const url = upload.body.videoUrl;
		const usageBefore = (await call(fleet.replicas[0]!, '/v1/usage')).body;
		await fleet.restartAll();
		for (const replica of fleet.replicas) {
			const file = await download(onReplica(url, replica));
			expect(file.status).toBe(200);
			expect(file.bytes.equals(video)).toBe(true);
			expect((await call(replica, '/v1/usage')).body).toEqual(usageBefore);
		}
	}, 60_000);
});
