/**
 * Generations as durable jobs: what a job is, what the API says of it, who is told when one ends,
 * and the store that keeps them (sql-job-store.ts, on the data dir's SQLite database or on PostgreSQL
 * for a fleet).
 *
 * A job is written before its provider is called, with what the budget reserved; the host's own
 * job id as soon as the host names it; its end (answer or error) once. A running job belongs to
 * one process (`owner`) while that process renews its lease; a job whose lease ran out was left by
 * a process that died, and another process claims it (generation/provider.ts `resume`).
 */
import type { GenerationResponse, VideoResult } from '../../../core/api';
import type { CatalogModelId } from '../../../core/video-models';
import type { InlineFilePart } from '../idempotency/idempotency-store';
import type { HostJobRef } from '../generation/provider';
import type { SqlStatement } from '../db/sql-adapter';

export type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** The API's error shape, as a job that failed or was canceled keeps it. */
export interface JobError {
	message: string;
	type: string;
	param: string | null;
	code: string;
}

/** The API's generation object (its zod schema lives in core/api.ts). */
export interface GenerationObject {
	object: 'generation';
	id: string;
	status: GenerationStatus;
	model: CatalogModelId;
	created: number;
	finished_at: number | null;
	/** The images' answer, or a video's result. */
	result: GenerationResponse | VideoResult | null;
	error: JobError | null;
}

/** Told once when a job reaches succeeded / failed / canceled, after that state is durable. */
export interface JobEndListener {
	/**
	 * Whether its generation objects carry inline images' base64, read back from storage for it
	 * (a whole image read and encoded per job); without it their `b64_json` is empty.
	 */
	readonly wantsInlineImages?: boolean;
	/** `job`: the job itself, when the runner tells (a video's event is made from it). */
	jobEnded(ended: { apiKeyId: string; webhookUrl?: string; generation: GenerationObject; job?: Job }): Promise<void>;
}

/**
 * A job's answer as kept: the answer body as JSON text without the bytes of its inline images,
 * and where each stored file's base64 goes (as an idempotent answer keeps it, storage/inline-answer.ts).
 */
export interface StoredResult {
	body: string;
	inlineFiles?: readonly InlineFilePart[];
}

export interface Job {
	/** `gen_` and 32 hex digits. */
	id: string;
	apiKeyId: string;
	model: CatalogModelId;
	status: GenerationStatus;
	/** The validated request, its seed drawn: what a resumed job is finished with. */
	request: Record<string, unknown>;
	webhookUrl: string | null;
	/** The chain member whose host took the job, and the host's id for it, once it named one. */
	hostJob: HostJobRef | null;
	/** What the budget admission reserved (micro-dollars), released when the job ends uncharged. */
	chargedMicros: number;
	result: StoredResult | null;
	error: JobError | null;
	createdAt: Date;
	finishedAt: Date | null;
	/** The process running the job, until `leaseUntil` unless it renews. */
	owner: string | null;
	leaseUntil: Date | null;
}

export type NewJob = Pick<Job, 'id' | 'apiKeyId' | 'model' | 'request' | 'webhookUrl' | 'chargedMicros' | 'createdAt'> & { owner: string; leaseUntil: Date };

export interface JobEnd {
	status: 'succeeded' | 'failed' | 'canceled';
	result?: StoredResult;
	error?: JobError;
	finishedAt: Date;
	/** The charge made at admission is released (in the same transaction, so exactly once). */
	release?: boolean;
	/**
	 * What the end decides, written in its transaction and only with it (a success's usage line, the
	 * webhook's delivery): made from the job as it ends. An end not written (the job was canceled
	 * or taken over meanwhile) writes none of it.
	 */
	alongside?: JobEndWrites;
}

/** Statements written in the transaction of a job's end, made from the job as it ends. */
export type JobEndWrites = (ended: Job) => readonly SqlStatement[];

/** The webhook delivery of each job's end (webhooks/job-events.ts): written with the end, then told it committed. */
export interface JobEndDeliveries {
	writes: JobEndWrites;
	/** The end, and its delivery with it, committed: the delivery may go now. */
	committed(ended: Job): Promise<void>;
}

/** What a job makes, told by its id's prefix: `gen_` images, `video_` a video. */
export type JobKind = 'image' | 'video';
export const JOB_ID_PREFIXES: Readonly<Record<JobKind, string>> = { image: 'gen', video: 'video' };

export interface JobListing {
	status?: GenerationStatus;
	/** 1–100. */
	limit: number;
	/** Only jobs of this kind; every kind when absent. */
	kind?: JobKind;
	/** The page starts after this job of the key (older than it). */
	after?: string;
}

export interface JobStore {
	/** A job that starts now, owned by `owner`; written before its provider is called. */
	create(job: NewJob): Promise<void>;
	/** The host accepted the job and named it. */
	hostJobStarted(id: string, job: HostJobRef): Promise<void>;
	/** Extends the owner's lease; false when the job is no longer its running job (canceled, claimed, ended). */
	renew(id: string, owner: string, leaseUntil: Date): Promise<boolean>;
	/** Ends a running job of `owner`; null (and nothing written) when it was no longer that (canceled meanwhile). */
	finish(id: string, owner: string, end: JobEnd): Promise<Job | null>;
	/**
	 * Cancels a job of `apiKeyId` that has not ended; answers it after (canceled, or its final state
	 * if it had ended), or null when the key has no such job. A job whose owner's lease had run out
	 * (nobody is running it) gets its charge back here; a live owner gives it back itself.
	 * `alongside` is written with the cancel, as with an end.
	 */
	cancel(id: string, apiKeyId: string, at: Date, alongside?: JobEndWrites): Promise<{ job: Job; canceledNow: boolean } | null>;
	/** A job of `apiKeyId`, or null (another key's jobs are not found). */
	get(id: string, apiKeyId: string): Promise<Job | null>;
	/** Whether the job is still `owner`'s running job: false once canceled (by any process), ended or taken over. */
	isRunning(id: string, owner: string): Promise<boolean>;
	/** The key's jobs, newest first. */
	list(apiKeyId: string, listing: JobListing): Promise<Job[]>;
	/** Deletes a job of `apiKeyId` that has ended; answers it as it was, or null (none, or still running). */
	remove(id: string, apiKeyId: string): Promise<Job | null>;
	/** Every key's jobs, newest first, at most `limit` (the operator page). */
	recent(limit: number): Promise<Job[]>;
	/** Releases the job's charge to its key's spend, if it still holds one (once, however often called). */
	release(id: string): Promise<void>;
	/** Takes over running jobs whose owner's lease ran out at `now` (a process that died): at most `limit`. */
	claimAbandoned(owner: string, leaseUntil: Date, now: Date, limit: number): Promise<Job[]>;
	/** The processes (owners) holding running jobs. */
	holders(): Promise<string[]>;
	/** Takes over the running jobs of `gone`, a process known to have stopped, whatever their lease: at most `limit`. */
	claimFrom(gone: string, owner: string, leaseUntil: Date, limit: number): Promise<Job[]>;
	/** How many jobs there are in each status. */
	counts(): Promise<Record<GenerationStatus, number>>;
	/** Deletes jobs that ended at or before `finishedBefore` (the retention); answers how many. */
	sweep(finishedBefore: Date): Promise<number>;
	close?(): Promise<void>;
}
