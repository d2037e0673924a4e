/**
 * What the fleet shares besides files: one rate limit per key across replicas, one schema
 * migrated once when every replica starts at the same moment on an empty database, and the same
 * sharing with bytes on a shared disk (`--storage disk` + `--database-url`).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { call, download, eventually, uploadFile } from '../support/http';
import { makeMp4 } from '../support/media';
import { onReplica, startFleet, startInfrastructure, type Fleet, type FleetInfrastructure } from '../support/replicas';

let infrastructure: FleetInfrastructure;
const fleets: Fleet[] = [];

beforeAll(async () => {
	infrastructure = await startInfrastructure();
}, 120_000);
afterAll(async () => {
	await Promise.all(fleets.map((fleet) => fleet.stop()));
	await infrastructure?.stop();
});

async function fleetOf(options: Parameters<typeof startFleet>[1]): Promise<Fleet> {
	const fleet = await startFleet(infrastructure, options);
	fleets.push(fleet);
	return fleet;
}

test('three replicas started at the same moment on an empty database all become ready on one schema', async () => {
	// startFleet starts the replicas together on a database created for it.
	const fleet = await fleetOf({});
	for (const replica of fleet.replicas) expect((await fetch(`${replica.origin}/healthz`)).status).toBe(200);
	const tables = await fleet.query<{ table_name: string }>(
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
	);
	expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(['files', 'idempotency_keys', 'rate_limit_buckets', 'usage_lines']));
	const applied = await fleet.query<{ version: number; count: string }>('SELECT version, count(*) FROM schema_migrations GROUP BY version');
	expect(applied.length).toBeGreaterThan(0);
	expect(applied.every((row) => row.count === '1')).toBe(true);
	for (const replica of fleet.replicas) expect((await call(replica, '/v1/usage')).status).toBe(200);
}, 60_000);

test('one rate limit for the fleet: of 90 requests spread over three replicas limited to 30 a minute, about 30 pass', async () => {
	const fleet = await fleetOf({ args: ['--rate-limit-per-minute', '30'] });
	const started = Date.now();
	const answers = await Promise.all(Array.from({ length: 90 }, (_, index) => call(fleet.replicas[index % 3]!, '/v1/models')));
	const elapsedMinutes = (Date.now() - started) / 60_000;
	const admitted = answers.filter((answer) => answer.status === 200).length;
	const refused = answers.filter((answer) => answer.status === 429);
	expect(admitted).toBeGreaterThanOrEqual(30);
	expect(admitted).toBeLessThanOrEqual(30 + Math.ceil(30 * elapsedMinutes));
	expect(admitted + refused.length).toBe(90);
	for (const answer of refused) {
		expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
		expect(answer.body.error.code).toBeDefined();
	}
	// Every replica refuses once the shared budget is spent, not only the one that spent it: no more
	// pass than the bucket refilled (one every 2 s) since the burst, however slow the machine is.
	const burstEnded = Date.now();
	let passed = 0;
	for (const replica of fleet.replicas) if ((await call(replica, '/v1/models')).status === 200) passed++;
	expect(passed).toBeLessThanOrEqual(Math.floor((Date.now() - burstEnded) / 2_000) + 1);
}, 60_000);

test('with --storage disk on a shared data dir: reads on every replica; after expiry a 404 on all, bytes and row swept', async () => {
	// There is no DELETE route yet: expiry is how a file leaves the fleet.
	const fleet = await fleetOf({ storage: 'disk', args: ['--retention-seconds', '3'] });
	const video = makeMp4(100_000);
	const upload = await uploadFile(fleet.replicas[0]!, video, {}, { fileName: 'clip.mp4', mimeType: 'video/mp4' });
	expect(upload.status).toBe(200);
	for (const replica of fleet.replicas.slice(1)) {
		const file = await download(onReplica(upload.body.videoUrl, replica));
		expect(file.status).toBe(200);
		expect(file.bytes.equals(video)).toBe(true);
		const range = await download(onReplica(upload.body.videoUrl, replica), { headers: { range: 'bytes=10-19' } });
		expect(range.status).toBe(206);
		expect(range.bytes.equals(video.subarray(10, 20))).toBe(true);
	}
	const filesDirectory = join(fleet.sharedDataDir, 'files');
	expect(readdirSync(filesDirectory).length).toBeGreaterThan(0);

	await delay(Math.max(0, Date.parse(upload.body.expiresAt) - Date.now()) + 50);
	for (const replica of fleet.replicas) {
		const response = await fetch(onReplica(upload.body.videoUrl, replica));
		expect(response.status).toBe(404);
		await response.arrayBuffer();
	}
	expect(await eventually(async () => (await fleet.query('SELECT id FROM files')).length === 0, 8_000)).toBe(true);
	expect(readdirSync(filesDirectory).filter((name) => !name.startsWith('.'))).toEqual([]);
}, 60_000);
