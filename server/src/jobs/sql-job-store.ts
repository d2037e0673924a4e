/**
 * Jobs, on the data dir's SQLite database (shared by every process on it) or on PostgreSQL (shared
 * by every replica: a job started on one is found, canceled and, when its replica dies, claimed and
 * finished by another). A running job is held under its owner's lease (db/lease.ts).
 *
 * A charge is released in one transaction with what decides it (an end the owner writes, a cancel
 * of a job nobody holds): the job's row is locked, its charge read, marked released and taken off
 * its key's spend of the day it was reserved on, so two at once release it once.
 *
 * On SQLite, a write that is only committed (`durable: false`) is one a power cut may undo without
 * harm, as each method says; the rest are synced before they answer.
 */
import { changedSomething, type SqlAdapter, type SqlStatement, type SqlTransaction } from '../db/sql-adapter';
import { sweepRows } from '../db/sweep';
import type { HostJobRef } from '../generation/provider';
import { CANCELED_ERROR, countsOf, finishValues, insertValues, JOB_SQL, releaseValues, toJob, type JobRow } from './job-rows';
import { JOB_ID_PREFIXES, type GenerationStatus, type Job, type JobEnd, type JobEndWrites, type JobListing, type JobStore, type NewJob } from './job-store';

type HeldCharge = Pick<JobRow, 'api_key_id' | 'charged_micros' | 'created_at'>;

export class SqlJobStore implements JobStore {
	/** The charge a job holds, its row locked until the transaction ends. */
	private readonly heldCharge: string;

	constructor(private readonly adapter: SqlAdapter) {
		this.heldCharge = `${JOB_SQL.held} ${adapter.forUpdate}`;
	}

	/**
	 * Committed, not synced on its own: the host's job id is written durably next (a commit syncs
	 * the log up to it, this row with it); a row lost with the power before it named no host job,
	 * which a restart could only have ended as interrupted.
	 */
	async create(job: NewJob): Promise<void> {
		await this.adapter.write([{ sql: JOB_SQL.insert, values: insertValues(job) }], { durable: false });
	}

	async hostJobStarted(id: string, job: HostJobRef): Promise<void> {
		await this.adapter.write([{ sql: JOB_SQL.hostJob, values: [id, job.provider, job.id] }]);
	}

	async renew(id: string, owner: string, leaseUntil: Date): Promise<boolean> {
		// A lost renewal only shortens a lease a process that is alive renews again: no sync.
		const { changes } = await this.adapter.write([{ sql: JOB_SQL.renew, values: [id, owner, leaseUntil] }], { durable: false });
		return changes === 1;
	}

	/**
	 * An end that releases a charge, or writes what it decides alongside (a usage line, a
	 * delivery), is synced before it answers. Any other is only committed: the answer does not wait
	 * a disk sync for a row that a power cut would leave running (a restart then ends it as
	 * interrupted and releases its charge).
	 */
	async finish(id: string, owner: string, end: JobEnd): Promise<Job | null> {
		const values = finishValues(id, owner, end);
		if (end.release) {
			// Released only with an end the owner writes (a cancel meanwhile released it, or leaves it to the owner).
			const row = await this.adapter.transaction(async (transaction) => {
				const ended = await transaction.one<JobRow>(JOB_SQL.finish, values);
				if (!ended) return undefined;
				await runAll(transaction, end.alongside?.(toJob(ended)) ?? []);
				return this.releaseIn(transaction, ended);
			});
			return row ? toJob(row) : null;
		}
		const alongside = end.alongside && (await this.alongsideOf(id, end));
		if (!alongside || alongside.length === 0) {
			const row = await this.adapter.write<JobRow | undefined>([{ sql: JOB_SQL.finish, values, returns: 'row' }], { durable: false });
			return row ? toJob(row) : null;
		}
		// One transaction: the end, then what it decides only if the end was written, then the job as it ended.
		const row = await this.adapter.write<JobRow | undefined>([
			{ sql: JOB_SQL.finish, values, returns: 'row' },
			...alongside.map((statement) => ({ ...statement, ifFirstChanged: true })),
			{ sql: JOB_SQL.byId, values: [id], returns: 'row', ifFirstChanged: true },
		]);
		return row ? toJob(row) : null;
	}

	async cancel(id: string, apiKeyId: string, at: Date, alongside?: JobEndWrites): Promise<{ job: Job; canceledNow: boolean } | null> {
		const canceled = await this.adapter.transaction(async (transaction) => {
			const row = await transaction.one<JobRow & { orphaned: number }>(JOB_SQL.cancel, [id, apiKeyId, at, JSON.stringify(CANCELED_ERROR)]);
			if (!row) return undefined;
			await runAll(transaction, alongside?.(toJob(row)) ?? []);
			return Number(row.orphaned) === 1 ? this.releaseIn(transaction, row) : row;
		});
		if (canceled) return { job: toJob(canceled), canceledNow: true };
		const job = await this.get(id, apiKeyId);
		return job ? { job, canceledNow: false } : null;
	}

	async get(id: string, apiKeyId: string): Promise<Job | null> {
		const row = await this.adapter.one<JobRow>(JOB_SQL.get, [id, apiKeyId]);
		return row ? toJob(row) : null;
	}

	async isRunning(id: string, owner: string): Promise<boolean> {
		return (await this.adapter.one(JOB_SQL.isRunning, [id, owner])) !== undefined;
	}

	async list(apiKeyId: string, listing: JobListing): Promise<Job[]> {
		const pattern = listing.kind === undefined ? '%' : `${JOB_ID_PREFIXES[listing.kind]}_%`;
		return (await this.adapter.all<JobRow>(JOB_SQL.list, [apiKeyId, listing.status ?? null, listing.limit, pattern, listing.after ?? null])).map(toJob);
	}

	async remove(id: string, apiKeyId: string): Promise<Job | null> {
		const row = await this.adapter.write<JobRow | undefined>([{ sql: JOB_SQL.remove, values: [id, apiKeyId], returns: 'row' }]);
		return row ? toJob(row) : null;
	}

	async recent(limit: number): Promise<Job[]> {
		return (await this.adapter.all<JobRow>(JOB_SQL.recent, [limit])).map(toJob);
	}

	async release(id: string): Promise<void> {
		await this.adapter.transaction((transaction) => this.releaseIn(transaction, { id }));
	}

	async claimAbandoned(owner: string, leaseUntil: Date, now: Date, limit: number): Promise<Job[]> {
		const rows = await this.adapter.write<JobRow[]>([{ sql: JOB_SQL.claim, values: [owner, leaseUntil, now, limit], returns: 'rows' }]);
		return rows.map(toJob);
	}

	async holders(): Promise<string[]> {
		return (await this.adapter.all<{ owner: string }>(JOB_SQL.holders)).map((row) => row.owner);
	}

	async claimFrom(gone: string, owner: string, leaseUntil: Date, limit: number): Promise<Job[]> {
		const rows = await this.adapter.write<JobRow[]>([{ sql: JOB_SQL.takeFrom, values: [owner, leaseUntil, gone, limit], returns: 'rows' }]);
		return rows.map(toJob);
	}

	async counts(): Promise<Record<GenerationStatus, number>> {
		return countsOf(await this.adapter.all<{ status: string; jobs: number | string }>(JOB_SQL.counts));
	}

	async sweep(finishedBefore: Date): Promise<number> {
		return sweepRows(this.adapter, 'generation_jobs', JOB_SQL.sweepable, [finishedBefore]);
	}

	/**
	 * What an end writes alongside, made from the job as it will read once ended (its row now, with
	 * the end's columns); nothing when the job is gone.
	 */
	private async alongsideOf(id: string, end: JobEnd): Promise<readonly SqlStatement[] | undefined> {
		const row = await this.adapter.one<JobRow>(JOB_SQL.byId, [id]);
		if (!row) return undefined;
		const ended: Job = { ...toJob(row), status: end.status, result: end.result ?? null, error: end.error ?? null, finishedAt: end.finishedAt, leaseUntil: null };
		return end.alongside!(ended);
	}

	/** Inside a transaction: releases the job's charge to its key's spend, once; answers the row as it is then. */
	private async releaseIn<Row extends Pick<JobRow, 'id'>>(transaction: SqlTransaction, row: Row): Promise<Row> {
		const held = await transaction.one<HeldCharge>(this.heldCharge, [row.id]);
		if (!held) return row;
		await transaction.run(JOB_SQL.released, [row.id]);
		await transaction.run(JOB_SQL.spend, releaseValues(held));
		return { ...row, charged_micros: 0 };
	}
}

/** Statements inside a transaction, in order, `ifChanged` honoured (the write's own rule). */
async function runAll(transaction: SqlTransaction, statements: readonly SqlStatement[]): Promise<void> {
	let answer: unknown;
	for (const statement of statements) {
		if (statement.ifChanged && !changedSomething(answer)) continue;
		answer = await transaction.run(statement.sql, statement.values);
	}
}
