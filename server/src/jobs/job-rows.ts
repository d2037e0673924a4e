/**
 * A job as both databases store it: the same columns and statements (numbered `$n` parameters,
 * which SQLite reads as named ones; sqlite/database.ts `bindNumbered`), read back into a Job. The
 * drivers differ only in how values travel (PostgreSQL: Dates, bigint as text; SQLite: unix
 * milliseconds), which `toJob` takes care of. JSON columns are text on both.
 */
import type { CatalogModelId } from '../../../core/video-models';
import { Lease } from '../db/lease';
import { KEY_SQL } from '../keys/key-rows';
import type { GenerationStatus, Job, JobEnd, JobError, NewJob, StoredResult } from './job-store';

const COLUMNS = ['id', 'api_key_id', 'model', 'status', 'request', 'webhook_url', 'provider', 'host_job_id', 'charged_micros', 'result', 'error',
	'created_at', 'finished_at', 'owner', 'lease_until'] as const;

const JOB_COLUMNS = COLUMNS.join(', ');

const NOT_ENDED = "status IN ('queued', 'running')";

/** A running job is its owner's (a process) while the owner renews `lease_until`. */
export const JOB_LEASE = new Lease({ table: 'generation_jobs', holder: 'owner', until: 'lease_until', live: "status = 'running'" });

export const JOB_SQL = {
	insert: `INSERT INTO generation_jobs (${JOB_COLUMNS}) VALUES (${COLUMNS.map((_, index) => `$${index + 1}`).join(', ')})`,
	hostJob: `UPDATE generation_jobs SET provider = $2, host_job_id = $3 WHERE id = $1 AND ${NOT_ENDED}`,
	renew: JOB_LEASE.renew('$1', '$2', '$3'),
	/** Only the owner's running job: a job canceled meanwhile keeps its state. */
	finish: `UPDATE generation_jobs SET status = $3, result = $4, error = $5, finished_at = $6, lease_until = NULL
		WHERE ${JOB_LEASE.heldBy('$1', '$2')} RETURNING ${JOB_COLUMNS}`,
	/** `orphaned`: nobody renews the job's lease, so nobody else gives its charge back. */
	cancel: `UPDATE generation_jobs SET status = 'canceled', error = $4, finished_at = $3
		WHERE id = $1 AND api_key_id = $2 AND ${NOT_ENDED}
		RETURNING ${JOB_COLUMNS}, CASE WHEN ${JOB_LEASE.unheld('$3')} THEN 1 ELSE 0 END AS orphaned`,
	/**
	 * The charge a job still holds, read inside the transaction that releases it (`released`), the
	 * row locked by the adapter's `forUpdate` that the store appends, so that two at once release it once.
	 */
	held: 'SELECT api_key_id, charged_micros, created_at FROM generation_jobs WHERE id = $1 AND charged_micros > 0',
	released: 'UPDATE generation_jobs SET charged_micros = 0 WHERE id = $1 AND charged_micros > 0',
	get: `SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE id = $1 AND api_key_id = $2`,
	/** A job by its id alone: as the store reads it around its own writes. */
	byId: `SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE id = $1`,
	/** One row's three columns by its key: asked once per generation, where `get` would read and parse the whole job. */
	isRunning: `SELECT 1 AS running FROM generation_jobs WHERE ${JOB_LEASE.heldBy('$1', '$2')}`,
	/**
	 * Args: the key, a status or null, how many, an id pattern (`video_%`: the videos), and the id of
	 * the job the page starts after (older than it) or null.
	 */
	list: `SELECT ${JOB_COLUMNS} FROM generation_jobs WHERE api_key_id = $1 AND (CAST($2 AS TEXT) IS NULL OR status = CAST($2 AS TEXT))
		AND id LIKE CAST($4 AS TEXT)
		AND (CAST($5 AS TEXT) IS NULL OR (created_at, id) < (SELECT created_at, id FROM generation_jobs WHERE id = CAST($5 AS TEXT) AND api_key_id = $1))
		ORDER BY created_at DESC, id DESC LIMIT $3`,
	/** A job that has ended, deleted by its key; answers its result (the files it hosted). */
	remove: `DELETE FROM generation_jobs WHERE id = $1 AND api_key_id = $2 AND NOT ${NOT_ENDED} RETURNING ${JOB_COLUMNS}`,
	/** Every key's newest jobs, for the operator (a top-`$1` sort over the table; retention bounds it). */
	recent: `SELECT ${JOB_COLUMNS} FROM generation_jobs ORDER BY created_at DESC, id DESC LIMIT $1`,
	/** Args: the new owner, its lease, now, how many at most; the longest abandoned first. */
	claim: JOB_LEASE.claim({
		candidates: `SELECT id FROM generation_jobs WHERE ${JOB_LEASE.ended('$3')} ORDER BY lease_until LIMIT $4`,
		holder: '$1',
		until: '$2',
		now: '$3',
		returning: JOB_COLUMNS,
	}),
	/** The processes holding running jobs. */
	holders: "SELECT DISTINCT owner FROM generation_jobs WHERE status = 'running' AND owner IS NOT NULL",
	/** Args: the new owner, its lease, the gone holder, how many at most. */
	takeFrom: JOB_LEASE.takeFrom({
		candidates: "SELECT id FROM generation_jobs WHERE status = 'running' AND owner = $3 LIMIT $4",
		from: '$3',
		holder: '$1',
		until: '$2',
		returning: JOB_COLUMNS,
	}),
	counts: 'SELECT status, count(*) AS jobs FROM generation_jobs GROUP BY status',
	/** Jobs that ended at or before `$1`: what a sweep deletes. */
	sweepable: `NOT ${NOT_ENDED} AND finished_at <= $1`,
	/** A release on the key's spend of the job's UTC day (the day its admission charged). */
	spend: KEY_SQL.addSpend,
};

export interface JobRow {
	id: string;
	api_key_id: string;
	model: string;
	status: string;
	request: string;
	webhook_url: string | null;
	provider: string | null;
	host_job_id: string | null;
	charged_micros: number | string;
	result: string | null;
	error: string | null;
	created_at: Date | number;
	finished_at: Date | number | null;
	owner: string | null;
	lease_until: Date | number | null;
}

/** The values of `JOB_SQL.insert`, in its order. */
export function insertValues(job: NewJob): unknown[] {
	const row: Record<(typeof COLUMNS)[number], unknown> = {
		id: job.id,
		api_key_id: job.apiKeyId,
		model: job.model,
		status: 'running',
		request: JSON.stringify(job.request),
		webhook_url: job.webhookUrl,
		provider: null,
		host_job_id: null,
		charged_micros: job.chargedMicros,
		result: null,
		error: null,
		created_at: job.createdAt,
		finished_at: null,
		owner: job.owner,
		lease_until: job.leaseUntil,
	};
	return COLUMNS.map((column) => row[column]);
}

/** The values of `JOB_SQL.finish`, in its order. */
export function finishValues(id: string, owner: string, end: JobEnd): unknown[] {
	return [id, owner, end.status, end.result ? JSON.stringify(end.result) : null, end.error ? JSON.stringify(end.error) : null, end.finishedAt];
}

const dateOf = (value: Date | number | null): Date | null => (value === null ? null : new Date(value));

export function toJob(row: JobRow): Job {
	return {
		id: row.id,
		apiKeyId: row.api_key_id,
		model: row.model as CatalogModelId,
		status: row.status as GenerationStatus,
		request: JSON.parse(row.request) as Record<string, unknown>,
		webhookUrl: row.webhook_url,
		hostJob: row.provider !== null && row.host_job_id !== null ? { provider: row.provider, id: row.host_job_id } : null,
		chargedMicros: Number(row.charged_micros),
		result: row.result === null ? null : (JSON.parse(row.result) as StoredResult),
		error: row.error === null ? null : (JSON.parse(row.error) as JobError),
		createdAt: new Date(row.created_at),
		finishedAt: dateOf(row.finished_at),
		owner: row.owner,
		leaseUntil: dateOf(row.lease_until),
	};
}

/** What `JOB_SQL.held` answered, as the `JOB_SQL.spend` values that give it back. */
export function releaseValues(row: { api_key_id: string; charged_micros: number | string; created_at: Date | number }): unknown[] {
	return [row.api_key_id, new Date(row.created_at).toISOString().slice(0, 10), -Number(row.charged_micros)];
}

/** The error a job canceled through the API keeps. */
export const CANCELED_ERROR: JobError = { message: 'The generation was canceled', type: 'invalid_request_error', param: null, code: 'canceled' };

/** Counts by status, every status present. */
export function countsOf(rows: ReadonlyArray<{ status: string; jobs: number | string }>): Record<GenerationStatus, number> {
	const counts: Record<GenerationStatus, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };
	for (const row of rows) if (row.status in counts) counts[row.status as GenerationStatus] = Number(row.jobs);
	return counts;
}
