/**
 * One clock decides: replicas on one PostgreSQL whose own clocks are 10 minutes apart agree on what
 * is alive. A file stored by either lives exactly the retention on the database's clock, a replica
 * ahead serves files the others serve, and its sweeper deletes nothing before its time.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningServer } from '../../helpers/server';
import { download, postJson } from '../support/http';
import { makeImage } from '../support/media';
import { onReplica, startFleet, startInfrastructure, skewedClock, type Fleet, type FleetInfrastructure } from '../support/replicas';

jest.setTimeout(180_000);

const RETENTION_SECONDS = 300;
const TEN_MINUTES_MS = 10 * 60_000;

const ADMIN_KEY = 'clock-skew-admin-key-0123456789';

/** Waits until the replica's sweeper has finished `count` passes without a failure (its metric). */
async function sweepsFinished(replica: RunningServer, count: number): Promise<void> {
	const deadline = Date.now() + 30_000;
	for (;;) {
		const metrics = await fetch(new URL('/metrics', replica.baseUrl), { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
		expect(metrics.status).toBe(200);
		const passes = Number(/^imagegen_sweeps_total\{outcome="success"\} (\d+)/m.exec(await metrics.text())?.[1] ?? 0);
		if (passes >= count) return;
		if (Date.now() > deadline) throw new Error(`the sweeper finished ${passes} of ${count} passes in 30 s`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

let infrastructure: FleetInfrastructure;
let fleet: Fleet;
const extra: RunningServer[] = [];

beforeAll(async () => {
	infrastructure = await startInfrastructure();
	fleet = await startFleet(infrastructure, { count: 1, storage: 'disk', args: ['--retention-seconds', String(RETENTION_SECONDS)] });
});
afterAll(async () => {
	await Promise.all(extra.map((replica) => replica.stop({ signal: 'SIGKILL' })));
	await fleet?.stop();
	await infrastructure?.stop();
});

const upload = async (replica: RunningServer, side: number) => {
	const answer = await postJson(replica, '/v1/uploads', { file: (await makeImage('png', side, side)).toString('base64') });
	expect(answer.status).toBe(200);
	return answer.body as { imageUrl: string; id: string; expiresAt: string };
};

it('a replica 10 minutes ahead stamps, serves and sweeps by the database clock', async () => {
	const [punctual] = fleet.replicas;
	const ahead = await fleet.startReplica([], skewedClock(TEN_MINUTES_MS));
	extra.push(ahead);

	const fromPunctual = await upload(punctual!, 20);
	const fromAhead = await upload(ahead, 21);
	// Both live the retention from now, whichever replica stored them.
	for (const file of [fromPunctual, fromAhead]) {
		expect(Math.abs(Date.parse(file.expiresAt) - (Date.now() + RETENTION_SECONDS * 1000))).toBeLessThan(30_000);
	}
	// Both replicas serve both files.
	for (const replica of [punctual!, ahead]) {
		for (const file of [fromPunctual, fromAhead]) expect((await download(onReplica(file.imageUrl, replica))).status).toBe(200);
	}
	const info = await fetch(`${ahead.baseUrl}/files/${fromPunctual.id}`, { headers: { authorization: `Bearer ${ahead.apiKey}` } });
	expect(info.status).toBe(200);

	// Another replica ahead starts: its sweeper runs at once, and finds nothing expired.
	const sweeper = await fleet.startReplica(['--admin-key', ADMIN_KEY], skewedClock(TEN_MINUTES_MS));
	extra.push(sweeper);
	await sweepsFinished(sweeper, 1);
	for (const file of [fromPunctual, fromAhead]) {
		expect(existsSync(join(fleet.sharedDataDir, 'files', file.imageUrl.split('/').pop()!))).toBe(true);
		expect((await download(onReplica(file.imageUrl, punctual!))).status).toBe(200);
	}
	expect(await fleet.query('SELECT id FROM files WHERE id = ANY($1)', [[fromPunctual.id, fromAhead.id]])).toHaveLength(2);
});

it('a punctual replica replays what a replica 10 minutes behind answered, for the retention on the database clock', async () => {
	const [punctual] = fleet.replicas;
	const behind = await fleet.startReplica([], skewedClock(-TEN_MINUTES_MS));
	extra.push(behind);
	const body = { file: (await makeImage('png', 22, 22)).toString('base64') };
	const first = await postJson(behind, '/v1/uploads', body, { headers: { 'idempotency-key': 'clock-skew-1' } });
	const repeat = await postJson(punctual!, '/v1/uploads', body, { headers: { 'idempotency-key': 'clock-skew-1' } });
	expect(first.status).toBe(200);
	expect(repeat.status).toBe(200);
	expect(repeat.headers.get('idempotent-replayed')).toBe('true');
	expect(repeat.body).toEqual(first.body);
	// The remembered answer lives the retention on the database clock, not the behind replica's.
	const [row] = await fleet.query<{ seconds: number }>("SELECT extract(epoch FROM expires_at - now())::float8 AS seconds FROM idempotency_keys WHERE key = 'clock-skew-1'");
	expect(Math.abs(row!.seconds - RETENTION_SECONDS)).toBeLessThan(60);
});

it('usage lines of replicas 10 minutes ahead and behind carry the database clock, so they count on the same day', async () => {
	const ahead = await fleet.startReplica([], skewedClock(TEN_MINUTES_MS));
	const behind = await fleet.startReplica([], skewedClock(-TEN_MINUTES_MS));
	extra.push(ahead, behind);
	for (const replica of [ahead, behind]) {
		const answer = await postJson(replica, '/v1/images/generations', { model: 'p-image', prompt: `clock ${replica.origin}`, response_format: 'b64_json' });
		expect(answer.status).toBe(200);
	}
	const rows = await fleet.query<{ seconds: number; day: string; today: string }>(
		"SELECT extract(epoch FROM now() - at)::float8 AS seconds, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS today FROM usage_lines WHERE model = 'p-image' ORDER BY at DESC LIMIT 2",
	);
	expect(rows).toHaveLength(2);
	for (const row of rows) {
		// Stamped within moments of the database's now, not 10 minutes either side of it.
		expect(Math.abs(row.seconds)).toBeLessThan(60);
		expect(row.day).toBe(row.today);
	}
});
