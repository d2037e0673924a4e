/**
 * Jobs in the data dir's SQLite database, shared by every process on it. Writes go through the
 * group commit (sqlite/group-commit.ts), so a job's rows share their disk sync with the usage line
 * and the file rows of the same moment; an end that gives a charge back is one transaction with it.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { HostJobRef } from '../generation/provider';
import { bindNumbered, statementCache, type SqliteDatabase, type SqliteStatement } from '../db/sqlite/database';
import { releaseFreePages } from '../db/sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../db/sqlite/group-commit';
import { CANCELED_ERROR, countsOf, finishValues, insertValues, JOB_SQL, toJob, type JobRow } from './job-rows';
import type { GenerationStatus, Job, JobEnd, JobListing, JobStore, NewJob } from './job-store';

/** Rows deleted per transaction by a sweep: the write lock is never held for long. */
const SWEEP_BATCH = 500;

/**
 * Gives a job's charge back to its key's spend of the job's UTC day, once: the spend changes only
 * while the job still holds a charge, and the next statement marks it given back, in the same
 * transaction, so two at once give it back once. `narrowed` says when (an end the owner writes, a cancel of an orphaned job).
 */
const GIVE_BACK = (narrowed = '') => [
	`INSERT INTO key_spend_days AS spend (key_id, day, spent_micros)
		SELECT api_key_id, strftime('%Y-%m-%d', created_at / 1000, 'unixepoch'), -charged_micros FROM generation_jobs
		WHERE id = $1 AND charged_micros > 0 ${narrowed}
		ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = spend.spent_micros + excluded.spent_micros`,
	`UPDATE generation_jobs SET charged_micros = 0 WHERE id = $1 AND charged_micros > 0 ${narrowed}`,
];
/** An end is the owner's to write only while its job runs (see JOB_SQL.finish). */
const OWNED = "AND owner = $2 AND status = 'running'";
/** A cancel gives the charge back itself only when nobody renews the job's lease (see JOB_SQL.cancel). */
const ORPHANED = "AND api_key_id = $2 AND status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until <= $3)";

export class SqliteJobStore implements JobStore {
	private readonly commits: SqliteGroupCommit;
	private readonly statement: (text: string) => SqliteStatement;

	constructor(private readonly database: SqliteDatabase) {
		this.statement = statementCache(database);
		this.commits = groupCommitOf(database);
	}

	/**
	 * Committed, not synced on its own: the host's job id is written durably next (a commit syncs
	 * the log up to it, this row with it); a row lost with the power before it named no host job,
	 * which a restart could only have ended as interrupted.
	 */
	async create(job: NewJob): Promise<void> {
		await this.commits.write([{ sql: JOB_SQL.insert, values: bindNumbered(insertValues(job)) }], { durable: false });
	}

	async hostJobStarted(id: string, job: HostJobRef): Promise<void> {
		await this.commits.write([{ sql: JOB_SQL.hostJob, values: bindNumbered([id, job.provider, job.id]) }]);
	}

	async renew(id: string, owner: string, leaseUntil: Date): Promise<boolean> {
		// A lost renewal only shortens a lease a process that is alive renews again: no sync.
		const { changes } = await this.commits.write<{ changes: number }>([{ sql: JOB_SQL.renew, values: bindNumbered([id, owner, leaseUntil]) }], { durable: false });
		return changes === 1;
	}

	/**
	 * An end that gives a charge back is synced before it answers. Any other is only committed: the
	 * usage line of a success is already durable, and the answer does not wait a second disk sync
	 * for a row that a power cut would leave running (a restart then ends it
	 * as interrupted and gives the budget its charge back; the usage line still counts it).
	 */
	async finish(id: string, owner: string, end: JobEnd): Promise<Job | null> {
		// Given back only with an end the owner writes (a cancel meanwhile gave it back or leaves it to the owner's release).
		const values = bindNumbered(finishValues(id, owner, end));
		const giveBack = end.refund ? GIVE_BACK(OWNED).map((sql) => ({ sql, values })) : [];
		const row = await this.commits.write<JobRow | undefined>([...giveBack, { sql: JOB_SQL.finish, values, row: true }], {
			durable: end.refund === true,
		});
		return row ? toJob(row) : null;
	}

	async cancel(id: string, apiKeyId: string, at: Date): Promise<{ job: Job; canceledNow: boolean } | null> {
		const values = bindNumbered([id, apiKeyId, at, JSON.stringify(CANCELED_ERROR)]);
		const canceled = await this.commits.write<JobRow | undefined>([...GIVE_BACK(ORPHANED).map((sql) => ({ sql, values })), { sql: JOB_SQL.cancel, values, row: true }]);
		if (canceled) return { job: toJob(canceled), canceledNow: true };
		const job = await this.get(id, apiKeyId);
		return job ? { job, canceledNow: false } : null;
	}

	async get(id: string, apiKeyId: string): Promise<Job | null> {
		const row = this.statement(JOB_SQL.get).get(bindNumbered([id, apiKeyId])) as JobRow | undefined;
		return row ? toJob(row) : null;
	}

	async isRunning(id: string, owner: string): Promise<boolean> {
		return this.statement(JOB_SQL.isRunning).get(bindNumbered([id, owner])) !== undefined;
	}

	async list(apiKeyId: string, listing: JobListing): Promise<Job[]> {
		return (this.statement(JOB_SQL.list).all(bindNumbered([apiKeyId, listing.status ?? null, listing.limit])) as JobRow[]).map(toJob);
	}

	async recent(limit: number): Promise<Job[]> {
		return (this.statement(JOB_SQL.recent).all(bindNumbered([limit])) as JobRow[]).map(toJob);
	}

	async refund(id: string): Promise<void> {
		await this.commits.write(GIVE_BACK().map((sql) => ({ sql, values: bindNumbered([id]) })));
	}

	async claimAbandoned(owner: string, leaseUntil: Date, now: Date, limit: number): Promise<Job[]> {
		const rows = await this.commits.write<JobRow[]>([{ sql: JOB_SQL.claim, values: bindNumbered([owner, leaseUntil, now, limit]), rows: true }]);
		return rows.map(toJob);
	}

	async counts(): Promise<Record<GenerationStatus, number>> {
		return countsOf(this.statement(JOB_SQL.counts).all(bindNumbered([])) as Array<{ status: string; jobs: number }>);
	}

	/** In batches, each its own short transaction, then gives the freed pages back. */
	async sweep(finishedBefore: Date): Promise<number> {
		const batch = `DELETE FROM generation_jobs WHERE rowid IN (SELECT rowid FROM generation_jobs WHERE ${JOB_SQL.sweepable} LIMIT ${SWEEP_BATCH})`;
		let removed = 0;
		for (;;) {
			const { changes } = await this.commits.write<{ changes: number }>([{ sql: batch, values: bindNumbered([finishedBefore]) }], { durable: false });
			removed += changes;
			if (changes < SWEEP_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await releaseFreePages(this.database);
		return removed;
	}
}
