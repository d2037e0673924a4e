/**
 * What every JobStore must do, written once and run against each adapter (the data dir in
 * test/server/jobs/job-store-sqlite.test.ts, PostgreSQL in job-store-postgres.test.ts): jobs found
 * only by their own key, ended once (a canceled job keeps its state) with what the end decides in
 * its transaction, leases renewed and taken over, charges released exactly once, and swept with
 * the retention.
 */
import { randomBytes } from 'node:crypto';
import type { KeyStore } from '../../../server/src/keys/key-store';
import type { JobStore, NewJob, StoredResult } from '../../../server/src/jobs/job-store';
import { CANCELED_ERROR } from '../../../server/src/jobs/job-rows';
import { managedKey } from './key-store-contract';

export interface JobStoreHarness {
	/** Stores over the harness's backing; called again it stands for another process or replica. */
	open(): Promise<{ jobs: JobStore; keys: KeyStore }>;
	cleanup(): Promise<void>;
}

const T0 = new Date('2030-01-01T12:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const MINUTE = 60_000;

const RESULT: StoredResult = {
	body: '{"created":1,"model":"p-image","output_format":"png","data":[{"b64_json":"","seed":7}],"usage":{"images":1,"cost_usd":0.005},"note":"é ✓ 🎨 \u2028"}',
	inlineFiles: [{ fileId: 'file-1', at: 70 }],
};
const FAILED = { message: 'The replicate provider failed', type: 'upstream_error', param: null, code: 'upstream_failed' };

export function describeJobStoreContract(name: string, factory: () => Promise<JobStoreHarness>): void {
	describe(`${name}: JobStore contract`, () => {
		let harness: JobStoreHarness;
		let store: JobStore;
		let keys: KeyStore;
		beforeEach(async () => {
			harness = await factory();
			({ jobs: store, keys } = await harness.open());
		});
		afterEach(() => harness.cleanup());

		const newJob = (overrides: Partial<NewJob> = {}): NewJob => ({
			id: `gen_${randomBytes(16).toString('hex')}`,
			apiKeyId: 'key-a',
			model: 'p-image',
			request: { model: 'p-image', prompt: 'a fox, "quoted" ✓', seed: 42, response_format: 'b64_json' },
			webhookUrl: null,
			chargedMicros: 0,
			createdAt: T0,
			owner: 'process-1',
			leaseUntil: at(MINUTE),
			...overrides,
		});
		const started = async (overrides: Partial<NewJob> = {}) => {
			const job = newJob(overrides);
			await store.create(job);
			return job;
		};
		/** A budgeted key charged `micros` on T0's day, as an admission charges it. */
		const chargedKey = async (micros: number) => {
			const key = managedKey({ budget: { limitUsd: 10, period: 'day' } });
			await keys.create(key);
			expect(await keys.reserve({ id: 'r', keyId: key.id, amountUsd: micros / 1e6, limitUsd: 10, since: T0 }, T0)).toEqual({ admitted: true });
			return key.id;
		};
		const spentMicros = async (keyId: string) => Math.round((await keys.spent(keyId, T0)) * 1e6);

		it('keeps a job as written, found only by its own key', async () => {
			const job = await started({ webhookUrl: 'https://hooks.example/a?b=1', chargedMicros: 5_000 });
			expect(await store.get(job.id, 'key-a')).toEqual({
				...job,
				status: 'running',
				hostJob: null,
				result: null,
				error: null,
				finishedAt: null,
			});
			expect(await store.get(job.id, 'key-b')).toBeNull();
			expect(await store.get('gen_unknown', 'key-a')).toBeNull();
		});

		it("records the host's job once it is named", async () => {
			const job = await started();
			await store.hostJobStarted(job.id, { provider: 'replicate', id: 'pred-123' });
			expect((await store.get(job.id, 'key-a'))!.hostJob).toEqual({ provider: 'replicate', id: 'pred-123' });
		});

		it("ends a job once, and only its owner's running job", async () => {
			const job = await started();
			expect(await store.finish(job.id, 'process-2', { status: 'failed', error: FAILED, finishedAt: at(1000) })).toBeNull();
			const ended = await store.finish(job.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(2000) });
			expect(ended).toMatchObject({ id: job.id, status: 'succeeded', result: RESULT, error: null, finishedAt: at(2000) });
			expect(await store.finish(job.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(3000) })).toBeNull();
			expect(await store.get(job.id, 'key-a')).toEqual(ended);
		});

		it('writes what an end or a cancel decides in its transaction, made from the job as it ends, and only with it', async () => {
			// What is written alongside here is a mark on another job's row, so the store alone can read it back.
			const witness = await started({ apiKeyId: 'key-w' });
			const seen: string[] = [];
			const mark = (micros: number) => (ended: { id: string; status: string; finishedAt: Date | null }) => {
				seen.push(`${ended.status} ${ended.finishedAt?.toISOString()}`);
				return [{ sql: 'UPDATE generation_jobs SET charged_micros = $2 WHERE id = $1', values: [witness.id, micros] }];
			};
			const markOf = async () => (await store.get(witness.id, 'key-w'))!.chargedMicros;

			const job = await started();
			expect(await store.finish(job.id, 'process-2', { status: 'failed', error: FAILED, finishedAt: at(1000), alongside: mark(1) })).toBeNull();
			expect(await markOf()).toBe(0);
			const ended = await store.finish(job.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(2000), alongside: mark(2) });
			expect(ended).toMatchObject({ status: 'succeeded', result: RESULT, finishedAt: at(2000) });
			expect(await markOf()).toBe(2);
			// Made from the job as it would end (asked even for an end not written, which writes none of it).
			expect(seen.at(-1)).toBe(`succeeded ${at(2000).toISOString()}`);

			const canceled = await started();
			expect((await store.cancel(canceled.id, 'key-a', at(3000), mark(3)))?.canceledNow).toBe(true);
			expect(await markOf()).toBe(3);
			expect(await store.cancel(canceled.id, 'key-a', at(4000), mark(4))).toMatchObject({ canceledNow: false });
			expect(await store.finish(canceled.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(5000), alongside: mark(5) })).toBeNull();
			expect(await markOf()).toBe(3);

			// An end whose alongside fails is not written either, as a plain end and as one that releases a charge.
			// (Matched by message: an error better-sqlite3 makes on the service's connection is not an Error of this test's realm.)
			const failing = () => [{ sql: 'UPDATE no_such_table SET x = 1' }];
			const refused = await started();
			await expect(store.finish(refused.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(6000), alongside: failing })).rejects.toHaveProperty('message', expect.stringContaining('no_such_table'));
			expect(await store.get(refused.id, 'key-a')).toMatchObject({ status: 'running' });
			const refusedRelease = await started();
			await expect(store.finish(refusedRelease.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(6000), release: true, alongside: failing })).rejects.toHaveProperty('message', expect.stringContaining('no_such_table'));
			expect(await store.get(refusedRelease.id, 'key-a')).toMatchObject({ status: 'running' });
		});

		it('cancels a running job, which its owner then cannot overwrite; a finished job answers its final state', async () => {
			const job = await started();
			const canceled = await store.cancel(job.id, 'key-a', at(1000));
			expect(canceled).toMatchObject({ canceledNow: true, job: { status: 'canceled', error: CANCELED_ERROR, finishedAt: at(1000) } });
			expect(await store.renew(job.id, 'process-1', at(2 * MINUTE))).toBe(false);
			expect(await store.finish(job.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(2000) })).toBeNull();
			expect(await store.cancel(job.id, 'key-a', at(3000))).toEqual({ canceledNow: false, job: canceled!.job });

			const done = await started();
			const ended = await store.finish(done.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(1000) });
			expect(await store.cancel(done.id, 'key-a', at(2000))).toEqual({ canceledNow: false, job: ended });
			expect(await store.cancel(done.id, 'key-b', at(2000))).toBeNull();
			expect(await store.cancel(job.id, 'key-b', at(2000))).toBeNull();
		});

		it("lists a key's jobs newest first, by status, at most `limit`", async () => {
			const ids: string[] = [];
			for (let i = 0; i < 4; i += 1) ids.push((await started({ createdAt: at(i * 1000) })).id);
			await started({ apiKeyId: 'key-b', createdAt: at(10_000) });
			await store.finish(ids[1]!, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(5000) });
			await store.finish(ids[2]!, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(5000) });
			expect((await store.list('key-a', { limit: 20 })).map((job) => job.id)).toEqual([...ids].reverse());
			expect((await store.list('key-a', { limit: 2 })).map((job) => job.id)).toEqual([ids[3], ids[2]]);
			expect((await store.list('key-a', { status: 'succeeded', limit: 20 })).map((job) => job.id)).toEqual([ids[2], ids[1]]);
			expect(await store.list('key-a', { status: 'canceled', limit: 20 })).toEqual([]);
			expect(await store.list('key-c', { limit: 20 })).toEqual([]);
		});

		it('answers the newest jobs of every key, ended or not, at most `limit`', async () => {
			const first = await started({ createdAt: at(0) });
			const other = await started({ apiKeyId: 'key-b', createdAt: at(2000) });
			const newest = await started({ createdAt: at(3000) });
			const failed = await store.finish(first.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(4000) });
			const recent = await store.recent(20);
			expect(recent.map((job) => job.id)).toEqual([newest.id, other.id, first.id]);
			expect(recent[1]).toMatchObject({ apiKeyId: 'key-b', status: 'running', finishedAt: null, error: null });
			expect(recent[2]).toEqual(failed);
			expect((await store.recent(2)).map((job) => job.id)).toEqual([newest.id, other.id]);
		});

		it("tells whether a job is still its owner's running one", async () => {
			const job = await started();
			expect(await store.isRunning(job.id, 'process-1')).toBe(true);
			expect(await store.isRunning(job.id, 'process-2')).toBe(false);
			expect(await store.isRunning('gen_unknown', 'process-1')).toBe(false);
			await (await harness.open()).jobs.cancel(job.id, 'key-a', at(1000));
			expect(await store.isRunning(job.id, 'process-1')).toBe(false);
			const ended = await started();
			await store.finish(ended.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(1000) });
			expect(await store.isRunning(ended.id, 'process-1')).toBe(false);
		});

				it('renews the lease of its own running job only', async () => {
			const job = await started();
			expect(await store.renew(job.id, 'process-1', at(2 * MINUTE))).toBe(true);
			expect(await store.renew(job.id, 'process-2', at(3 * MINUTE))).toBe(false);
			expect((await store.get(job.id, 'key-a'))!.leaseUntil).toEqual(at(2 * MINUTE));
		});

		it('hands a running job whose lease ran out to one claimant, with its host job', async () => {
			const left = await started({ leaseUntil: at(MINUTE) });
			await store.hostJobStarted(left.id, { provider: 'pruna', id: 'p-9' });
			const live = await started({ leaseUntil: at(10 * MINUTE) });
			const ended = await started({ leaseUntil: at(MINUTE) });
			await store.finish(ended.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(1000) });
			expect(await store.claimAbandoned('process-2', at(3 * MINUTE), at(MINUTE - 1), 10)).toEqual([]);
			const claimed = await store.claimAbandoned('process-2', at(3 * MINUTE), at(2 * MINUTE), 10);
			expect(claimed).toEqual([expect.objectContaining({ id: left.id, owner: 'process-2', leaseUntil: at(3 * MINUTE), hostJob: { provider: 'pruna', id: 'p-9' } })]);
			const other = await harness.open();
			expect(await other.jobs.claimAbandoned('process-3', at(4 * MINUTE), at(2 * MINUTE), 10)).toEqual([]);
			expect(await store.finish(left.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(1000) })).toBeNull();
			expect((await store.get(live.id, 'key-a'))!.owner).toBe('process-1');
		});

		it("names the processes holding running jobs, and hands a gone one's running jobs over whatever their lease", async () => {
			const gone = await started({ owner: 'machine/41/a', leaseUntil: at(10 * MINUTE) });
			const goneEnded = await started({ owner: 'machine/41/a', leaseUntil: at(10 * MINUTE) });
			await store.finish(goneEnded.id, 'machine/41/a', { status: 'failed', error: FAILED, finishedAt: at(1000) });
			const alive = await started({ owner: 'machine/42/b', leaseUntil: at(10 * MINUTE) });
			expect(await store.holders()).toEqual(expect.arrayContaining(['machine/41/a', 'machine/42/b']));
			const taken = await store.claimFrom('machine/41/a', 'machine/43/c', at(3 * MINUTE), 10);
			expect(taken).toEqual([expect.objectContaining({ id: gone.id, owner: 'machine/43/c', leaseUntil: at(3 * MINUTE), status: 'running' })]);
			expect(await store.claimFrom('machine/41/a', 'machine/44/d', at(3 * MINUTE), 10)).toEqual([]);
			expect((await store.get(alive.id, 'key-a'))!.owner).toBe('machine/42/b');
			expect((await store.get(goneEnded.id, 'key-a'))!.status).toBe('failed');
			expect(await store.holders()).not.toContain('machine/41/a');
		});

		it('gives a charge back exactly once when an end says so', async () => {
			const keyId = await chargedKey(5_000);
			const job = await started({ apiKeyId: keyId, chargedMicros: 5_000 });
			expect(await spentMicros(keyId)).toBe(5_000);
			const interrupted = { message: 'cut off', type: 'server_error', param: null, code: 'interrupted' };
			const ended = await store.finish(job.id, 'process-1', { status: 'failed', error: interrupted, finishedAt: at(1000), release: true });
			expect(ended).toMatchObject({ status: 'failed', error: interrupted, chargedMicros: 0 });
			expect(await spentMicros(keyId)).toBe(0);
			expect(await store.finish(job.id, 'process-1', { status: 'failed', error: interrupted, finishedAt: at(1000), release: true })).toBeNull();
			expect(await spentMicros(keyId)).toBe(0);
		});

		it("a cancel gives the charge back only when no process holds the job's lease", async () => {
			const keyId = await chargedKey(8_000);
			const held = await started({ apiKeyId: keyId, chargedMicros: 3_000, leaseUntil: at(MINUTE) });
			const orphaned = await started({ apiKeyId: keyId, chargedMicros: 5_000, leaseUntil: at(MINUTE) });
			await store.renew(held.id, 'process-1', at(10 * MINUTE));
			await store.cancel(held.id, keyId, at(2 * MINUTE));
			expect(await spentMicros(keyId)).toBe(8_000);
			await store.cancel(orphaned.id, keyId, at(2 * MINUTE));
			expect(await spentMicros(keyId)).toBe(3_000);
			await store.cancel(orphaned.id, keyId, at(3 * MINUTE));
			expect(await spentMicros(keyId)).toBe(3_000);
		});

		it('counts jobs by status', async () => {
			const a = await started();
			await started();
			await store.cancel(a.id, 'key-a', at(1000));
			expect(await store.counts()).toEqual({ queued: 0, running: 1, succeeded: 0, failed: 0, canceled: 1 });
		});

		it('sweeps jobs that ended at or before the cutoff, never a running one', async () => {
			const old = await started();
			const recent = await started();
			const running = await started({ createdAt: at(-10 * MINUTE) });
			await store.finish(old.id, 'process-1', { status: 'succeeded', result: RESULT, finishedAt: at(1000) });
			await store.finish(recent.id, 'process-1', { status: 'failed', error: FAILED, finishedAt: at(5000) });
			expect(await store.sweep(at(999))).toBe(0);
			expect(await store.sweep(at(1000))).toBe(1);
			expect(await store.get(old.id, 'key-a')).toBeNull();
			expect(await store.get(recent.id, 'key-a')).not.toBeNull();
			expect(await store.sweep(at(60 * MINUTE))).toBe(1);
			expect(await store.get(running.id, 'key-a')).not.toBeNull();
		});
	});
}
