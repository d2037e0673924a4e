/**
 * SIGTERM drains: a replica stops taking connections but finishes the uploads it has, so an
 * upload running when it is told to stop still lands in the shared bucket, and a rolling restart
 * of the whole fleet under a steady client load fails no request.
 */
import type { RunningServer } from '../../helpers/server';
import { download, eventually } from '../support/http';
import { onReplica, startFleet, startInfrastructure, streamUpload, type Fleet, type FleetInfrastructure } from '../support/replicas';

let infrastructure: FleetInfrastructure;
let fleet: Fleet;

beforeAll(async () => {
	infrastructure = await startInfrastructure();
	fleet = await startFleet(infrastructure);
}, 120_000);
afterAll(async () => {
	await fleet?.stop();
	await infrastructure?.stop();
});

/** SIGTERM, and the exit code once the replica has drained. */
function terminate(replica: RunningServer): Promise<number | null> {
	const exited = new Promise<number | null>((resolve) => replica.process.once('exit', (code) => resolve(code)));
	replica.process.kill('SIGTERM');
	return exited;
}

test('an upload running when its replica gets SIGTERM completes, and the file is served by another replica', async () => {
	const [a, b] = fleet.replicas as [RunningServer, RunningServer];
	const upload = streamUpload(a, { totalBytes: 12 * 1024 * 1024, chunkBytes: 128 * 1024, pauseMs: 25 });
	expect(await eventually(() => upload.sent() > 2 * 1024 * 1024, 20_000)).toBe(true);
	const exitCode = terminate(a);
	const answer = await upload.answer;
	expect(answer.status).toBe(200);
	expect(await exitCode).toBe(0);
	expect(a.output()).toMatch(/received SIGTERM/);

	const file = await download(onReplica(answer.body.videoUrl, b));
	expect(file.status).toBe(200);
	expect(file.bytes.length).toBe(12 * 1024 * 1024);
	fleet.replicas[0] = await fleet.startReplica();
}, 60_000);

test('a rolling restart of every replica under a client loop fails no request', async () => {
	// The load balancer: replicas in rotation get new requests; one leaves the rotation a moment
	// before its SIGTERM (a deregistration delay, so connections already being opened arrive) and
	// its successor joins once ready. Uploads last ~0.6 s, so some are always in flight.
	const rotation = [...fleet.replicas];
	let next = 0;
	const pick = () => rotation[next++ % rotation.length]!;
	const failures: string[] = [];
	let completed = 0;
	let rolling = true;
	const inFlight = new Map<RunningServer, number>();
	let drainedUploads = 0;

	const client = async () => {
		while (rolling) {
			const target = pick();
			inFlight.set(target, (inFlight.get(target) ?? 0) + 1);
			try {
				const answer = await streamUpload(target, { totalBytes: 2 * 1024 * 1024, chunkBytes: 64 * 1024, pauseMs: 15 }).answer;
				if (answer.status !== 200) throw new Error(`upload answered ${answer.status}: ${JSON.stringify(answer.body)}`);
				const file = await download(onReplica(answer.body.videoUrl, pick()));
				if (file.status !== 200 || file.bytes.length !== 2 * 1024 * 1024) throw new Error(`download answered ${file.status}, ${file.bytes.length} bytes`);
				completed += 1;
			} catch (error) {
				failures.push(`${target.origin}: ${error instanceof Error ? `${error.message} ${String(error.cause ?? '')}` : String(error)}`);
			} finally {
				inFlight.set(target, inFlight.get(target)! - 1);
			}
		}
	};
	const clients = Array.from({ length: 4 }, client);

	for (let index = 0; index < fleet.replicas.length; index++) {
		const old = fleet.replicas[index]!;
		rotation.splice(rotation.indexOf(old), 1);
		await new Promise((resolve) => setTimeout(resolve, 50));
		drainedUploads += inFlight.get(old) ?? 0;
		const [exitCode, successor] = await Promise.all([terminate(old), fleet.startReplica()]);
		expect(exitCode).toBe(0);
		fleet.replicas[index] = successor;
		rotation.push(successor);
		await new Promise((resolve) => setTimeout(resolve, 300));
	}
	rolling = false;
	await Promise.all(clients);
	expect(failures).toEqual([]);
	expect(completed).toBeGreaterThan(10);
	expect(drainedUploads).toBeGreaterThan(0);
}, 120_000);
