/**
 * Jobs in the data dir's SQLite database, shared by every process on it. Writes go through the
 * group commit (sqlite/group-commit.ts), so a job's rows share their disk sync with the usage line
 * and the file rows of the same moment; an end that gives a charge back is one transaction with it.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { HostJobRef } from '../generation/provider';
import { bindNumbered, type SqliteDatabase } from '../sqlite/database';
import { releaseFreePages } from '../sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../sqlite/group-commit';
import { CANCELED_ERROR, countsOf, finishValues, insertValues, JOB_SQL, refundValues, toJob, type JobRow } from './job-rows';
import type { GenerationStatus, Job, JobEnd, JobListing, JobStore, NewJob } from './job-store';

type Statement = ReturnType<SqliteDatabase['prepare']>;

/** Rows deleted per transaction by a sweep: the write lock is never held for long. */
const SWEEP_BATCH = 500;

type RefundRow = { api_key_id: string; charged_micros: number; created_at: number };

export class SqliteJobStore implements JobStore {
	private readonly commits: SqliteGroupCommit;
	private readonly prepared = new Map<string, Statement>();

	constructor(private readonly database: SqliteDatabase) {
		this.commits = groupCommitOf(database);
	}

	/**
	 * Committed, not synced on its own: the host's job id is written durably next (a commit syncs
	 * the log up to it, this row with it); a row lost with the power before it named no host job,
	 * which a restart could only have ended as interrupted.
	 */
	async create(job: NewJob): Promise<void> {
		await this.commits.write(() => this.statement(JOB_SQL.insert).run(bindNumbered(insertValues(job))), { durable: false });
	}

	async hostJobStarted(id: string, job: HostJobRef): Promise<void> {
		await this.commits.write(() => this.statement(JOB_SQL.hostJob).run(bindNumbered([id, job.provider, job.id])));
	}

	async renew(id: string, owner: string, leaseUntil: Date): Promise<boolean> {
		// A lost renewal only shortens a lease a process that is alive renews again: no sync.
		const { changes } = await this.commits.write(() => this.statement(JOB_SQL.renew).run(bindNumbered([id, owner, leaseUntil])), { durable: false });
		return changes === 1;
	}

	/**
	 * An end that gives a charge back is synced before it answers. Any other is only committed: the
	 * usage line of a success is already durable, and the answer does not wait a second disk sync
	 * for a row that a power cut would leave running (a restart then ends it
	 * as interrupted and gives the budget its charge back; the usage line still counts it).
	 */
	async finish(id: string, owner: string, end: JobEnd): Promise<Job | null> {
		const row = await this.commits.write(
			() => {
				const ended = this.statement(JOB_SQL.finish).get(bindNumbered(finishValues(id, owner, end))) as JobRow | undefined;
				return ended && end.refund ? this.giveBack(ended) : ended;
			},
			{ durable: end.refund === true },
		);
		return row ? toJob(row) : null;
	}

	async cancel(id: string, apiKeyId: string, at: Date): Promise<{ job: Job; canceledNow: boolean } | null> {
		const canceled = await this.commits.write(() => {
			const row = this.statement(JOB_SQL.cancel).get(bindNumbered([id, apiKeyId, at, JSON.stringify(CANCELED_ERROR)])) as (JobRow & { orphaned: number }) | undefined;
			return row?.orphaned ? this.giveBack(row) : row;
		});
		if (canceled) return { job: toJob(canceled), canceledNow: true };
		const job = await this.get(id, apiKeyId);
		return job ? { job, canceledNow: false } : null;
	}

	async get(id: string, apiKeyId: string): Promise<Job | null> {
		const row = this.statement(JOB_SQL.get).get(bindNumbered([id, apiKeyId])) as JobRow | undefined;
		return row ? toJob(row) : null;
	}

	async list(apiKeyId: string, listing: JobListing): Promise<Job[]> {
		return (this.statement(JOB_SQL.list).all(bindNumbered([apiKeyId, listing.status ?? null, listing.limit])) as JobRow[]).map(toJob);
	}

	async refund(id: string): Promise<void> {
		await this.commits.write(() => this.giveBack({ id } as JobRow));
	}

	async claimAbandoned(owner: string, leaseUntil: Date, now: Date, limit: number): Promise<Job[]> {
		const rows = await this.commits.write(() => this.statement(JOB_SQL.claim).all(bindNumbered([owner, leaseUntil, now, limit])) as JobRow[]);
		return rows.map(toJob);
	}

	async counts(): Promise<Record<GenerationStatus, number>> {
		return countsOf(this.statement(JOB_SQL.counts).all(bindNumbered([])) as Array<{ status: string; jobs: number }>);
	}

	/** In batches, each its own short transaction, then gives the freed pages back. */
	async sweep(finishedBefore: Date): Promise<number> {
		const batch = this.statement(`DELETE FROM generation_jobs WHERE rowid IN (SELECT rowid FROM generation_jobs WHERE ${JOB_SQL.sweepable} LIMIT ${SWEEP_BATCH})`);
		let removed = 0;
		for (;;) {
			const { changes } = await this.commits.write(() => batch.run(bindNumbered([finishedBefore])), { durable: false });
			removed += changes;
			if (changes < SWEEP_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await releaseFreePages(this.database);
		return removed;
	}

	/** Inside a write: gives the job's charge back to its key's spend, once; answers the row as it is then. */
	private giveBack<Row extends JobRow>(row: Row): Row {
		const charged = this.statement(JOB_SQL.charged).get(bindNumbered([row.id])) as RefundRow | undefined;
		if (!charged) return row;
		if (this.statement(JOB_SQL.refunded).run(bindNumbered([row.id])).changes === 1) this.statement(JOB_SQL.spend).run(bindNumbered(refundValues(charged)));
		return { ...row, charged_micros: 0 };
	}

	private statement(text: string): Statement {
		let statement = this.prepared.get(text);
		if (!statement) {
			statement = this.database.prepare(text);
			this.prepared.set(text, statement);
		}
		return statement;
	}
}
