/**
 * Jobs in PostgreSQL, shared by every replica: a job started on one is found, canceled and, when
 * its replica dies, claimed and finished by another. An end that gives a charge back is one
 * transaction with it.
 */
import type { Pool, PoolClient } from 'pg';
import { withConnection } from '../db/postgres/connection';
import type { HostJobRef } from '../generation/provider';
import { CANCELED_ERROR, countsOf, finishValues, insertValues, JOB_SQL, refundValues, toJob, type JobRow } from './job-rows';
import type { GenerationStatus, Job, JobEnd, JobListing, JobStore, NewJob } from './job-store';

/** Inside a transaction: gives the job's charge back to its key's spend, once; answers the row as it is then. */
async function refund<Row extends JobRow>(client: PoolClient, row: Row): Promise<Row> {
	const { rows } = await client.query<RefundRow>(JOB_SQL.charged, [row.id]);
	if (!rows[0]) return row;
	if ((await client.query(JOB_SQL.refunded, [row.id])).rowCount === 1) await client.query(JOB_SQL.spend, refundValues(rows[0]));
	return { ...row, charged_micros: 0 };
}

type RefundRow = { api_key_id: string; charged_micros: string; created_at: Date };

export class PgJobStore implements JobStore {
	constructor(private readonly pool: Pool) {}

	async create(job: NewJob): Promise<void> {
		await this.pool.query(JOB_SQL.insert, insertValues(job));
	}

	async hostJobStarted(id: string, job: HostJobRef): Promise<void> {
		await this.pool.query(JOB_SQL.hostJob, [id, job.provider, job.id]);
	}

	async renew(id: string, owner: string, leaseUntil: Date): Promise<boolean> {
		return (await this.pool.query(JOB_SQL.renew, [id, owner, leaseUntil])).rowCount === 1;
	}

	async finish(id: string, owner: string, end: JobEnd): Promise<Job | null> {
		if (!end.refund) {
			const { rows } = await this.pool.query<JobRow>(JOB_SQL.finish, finishValues(id, owner, end));
			return rows[0] ? toJob(rows[0]) : null;
		}
		const row = await withConnection(
			this.pool,
			async (client) => {
				const { rows } = await client.query<JobRow>(JOB_SQL.finish, finishValues(id, owner, end));
				return rows[0] && refund(client, rows[0]);
			},
			{ transaction: true },
		);
		return row ? toJob(row) : null;
	}

	async cancel(id: string, apiKeyId: string, at: Date): Promise<{ job: Job; canceledNow: boolean } | null> {
		const canceled = await withConnection(
			this.pool,
			async (client) => {
				const { rows } = await client.query<JobRow & { orphaned: number }>(JOB_SQL.cancel, [id, apiKeyId, at, JSON.stringify(CANCELED_ERROR)]);
				return rows[0]?.orphaned ? refund(client, rows[0]) : rows[0];
			},
			{ transaction: true },
		);
		if (canceled) return { job: toJob(canceled), canceledNow: true };
		const job = await this.get(id, apiKeyId);
		return job ? { job, canceledNow: false } : null;
	}

	async get(id: string, apiKeyId: string): Promise<Job | null> {
		const { rows } = await this.pool.query<JobRow>(JOB_SQL.get, [id, apiKeyId]);
		return rows[0] ? toJob(rows[0]) : null;
	}

	async isRunning(id: string, owner: string): Promise<boolean> {
		const { rowCount } = await this.pool.query(JOB_SQL.isRunning, [id, owner]);
		return rowCount === 1;
	}

	async list(apiKeyId: string, listing: JobListing): Promise<Job[]> {
		const { rows } = await this.pool.query<JobRow>(JOB_SQL.list, [apiKeyId, listing.status ?? null, listing.limit]);
		return rows.map(toJob);
	}

	async recent(limit: number): Promise<Job[]> {
		const { rows } = await this.pool.query<JobRow>(JOB_SQL.recent, [limit]);
		return rows.map(toJob);
	}

	async refund(id: string): Promise<void> {
		await withConnection(this.pool, (client) => refund(client, { id } as JobRow), { transaction: true });
	}

	async claimAbandoned(owner: string, leaseUntil: Date, now: Date, limit: number): Promise<Job[]> {
		const { rows } = await this.pool.query<JobRow>(JOB_SQL.claim, [owner, leaseUntil, now, limit]);
		return rows.map(toJob);
	}

	async counts(): Promise<Record<GenerationStatus, number>> {
		return countsOf((await this.pool.query<{ status: string; jobs: string }>(JOB_SQL.counts)).rows);
	}

	async sweep(finishedBefore: Date): Promise<number> {
		return (await this.pool.query(`DELETE FROM generation_jobs WHERE ${JOB_SQL.sweepable}`, [finishedBefore])).rowCount ?? 0;
	}
}
