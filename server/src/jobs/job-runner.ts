/**
 * Every generation as a durable job, around the one generation runner (generation/run-generation.ts):
 * the job is written once the budget admitted it and before the provider is called, the host's job
 * id as soon as the host names it, and its end once, after which the JobEndListeners are told.
 * While it runs, this process renews its lease; a lease that ran out means the process died, and
 * `recover` (at start and periodically, on any replica) takes such jobs over: one the host named is
 * followed to its end (never created again) and charged once, one it did not name ends `failed`
 * with code `interrupted`, its charge released.
 *
 * A cancel reaches the store first (the answer already reads `canceled`); the process running the
 * job stops it at once, and the host is asked to cancel its job. A run that ends after its job
 * was canceled charges nothing and leaves the job as the cancel wrote it.
 */
import { randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { insufficientStorage, isStorageFull } from '../http/storage-full';
import { toMicros } from '../../../core/units';
import type { GenerationRequest } from '../../../core/schemas';
import type { VideoResult } from '../../../core/video-api';
import { isVideoModelId } from '../../../core/video-models';
import type { VideoRequest } from '../../../core/video-schemas';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { BudgetReservation } from '../generation/key-policy';
import { JobTakenOver, type HostJobRef } from '../generation/provider';
import { holderGone, holderStopped, processHolder } from './process-identity';
import { inSpan } from '../telemetry/spans';
import type { GenerationAnswer, GenerationCaller, GenerationRunner } from '../generation/run-generation';
import type { VideoRunner } from '../video/run-video';
import { inlineAnswerBody } from '../storage/inline-answer';
import { generationObject } from './generation-object';
import { storedRequest } from './stored-request';
import { EndsAwaitingSpace } from './ends-awaiting-space';
import type { JobUsageLine } from '../usage/job-usage-line';
import type { GenerationObject, Job, JobEnd, JobEndDeliveries, JobEndListener, JobError, JobStore } from './job-store';

/** How long a job stays this process's without a renewal; renewed every third of it. */
export const JOB_LEASE_MS = 60_000;

/** How long a close waits for the jobs running here (a synchronous request's is waited for by its request). */
const CLOSE_WAIT_MS = 10_000;

/** Jobs taken over per recovery pass; the rest wait for the next. */
const RECOVERY_BATCH = 100;

/** What a job asks for: images or a video. */
export type JobRequest = GenerationRequest | VideoRequest;
/** What a job answers: the images' answer or the video's result. */
export type JobAnswer = GenerationAnswer | VideoResult;

/** What the runner needs of a model's host: whether it follows a job again, and its cancel. */
export interface JobHost {
	resume?: unknown;
	cancel?(job: HostJobRef): Promise<void>;
}

export interface JobRunnerOptions {
	store: JobStore;
	runGeneration: GenerationRunner;
	runVideo: VideoRunner;
	/** The host serving each model. */
	hostOf(model: string): JobHost | undefined;
	listeners?: readonly JobEndListener[];
	/** Each end's webhook delivery, written in the end's transaction. */
	deliveries?: JobEndDeliveries;
	/** Base64 of an inline image's stored file, for the listeners' generation objects. */
	inlineBase64?: (fileId: string, apiKeyId: string) => Promise<string>;
	log: { error(details: object, message: string): void; info(details: object, message: string): void };
	leaseMs?: number;
}

/** The caller of a job: as of a generation, without what the runner supplies itself. */
export type JobCaller = Pick<GenerationCaller, 'apiKeyId' | 'apiKey' | 'timings'> & {
	/** Absent: the job runs on whatever its caller does (an asynchronous job). */
	clientGone?: AbortSignal;
	/**
	 * false: the caller takes the inline images from the answer and nobody can ask for them again (a
	 * synchronous call without an Idempotency-Key or a webhook): they are not stored, and the job's
	 * result is null. Storing them cost each such answer two commits and a file write.
	 */
	keepsInlineImages?: boolean;
};

export interface StartedJob {
	/** The job as written, running. */
	job: Job;
	/** The answer, once the job's end is durable; rejects with the generation's error. */
	answer: Promise<JobAnswer>;
}

interface Running {
	controller: AbortController;
	ended: Promise<unknown>;
}

/** What the error of a generation says in its job. */
function jobError(error: unknown): JobError {
	const known = error instanceof ImageGenError ? error : isStorageFull(error) ? insufficientStorage(error) : new ImageGenError(500, 'Internal error', { code: 'internal_error' });
	return known.toBody().error;
}

const INTERRUPTED = new ImageGenError(500, 'The generation was cut off by a restart before its host named it, so it cannot be followed; nothing was charged', {
	code: 'interrupted',
});

/**
 * `gen_` (images) or `video_` (a video, as OpenAI names them) and 122 random bits: randomUUID
 * draws from a pool, where randomBytes makes a system call per id.
 */
export function newJobId(model: string = 'p-image'): string {
	return `${isVideoModelId(model) ? 'video' : 'gen'}_${randomUUID().replaceAll('-', '')}`;
}

/** The caller as the job's runner passes it on to the image or the video runner. */
type RunCaller = GenerationCaller & {
	jobId: string;
	reserved?(reservation: { generation: JobRequest; reservedUsd: number }): Promise<void>;
	succeeded?(answer: JobAnswer, usageLine: JobUsageLine): Promise<void>;
};

/**
 * Starts, cancels and takes over jobs (see the top of this file). Each job running here is in
 * `running` until it ends, with the controller that stops it.
 */
export class JobRunner {
	private readonly store: JobStore;
	private readonly listeners: readonly JobEndListener[];
	private readonly leaseMs: number;
	/** This process, as the owner of the jobs it runs. */
	private readonly owner = processHolder();
	private readonly running = new Map<string, Running>();
	/** Ends a full disk refused, written once space is back (ends-awaiting-space.ts). */
	private readonly endsAwaitingSpace = new EndsAwaitingSpace(
		(id, end) => this.finish(id, { ...end, release: true }),
		(details, message) => this.options.log.error(details, message),
	);
	private closed = false;

	constructor(private readonly options: JobRunnerOptions) {
		this.store = options.store;
		this.listeners = options.listeners ?? [];
		this.leaseMs = options.leaseMs ?? JOB_LEASE_MS;
	}

	/**
	 * Starts a job and answers once it is written (the provider is being called). Throws without a
	 * job what is refused before: a model the key may not use, a spent budget, a malformed request.
	 */
	async start(generation: JobRequest, caller: JobCaller): Promise<StartedJob> {
		const id = newJobId(generation.model);
		const controller = new AbortController();
		const { clientGone } = caller;
		const onGone = () => controller.abort(clientGone!.reason);
		clientGone?.addEventListener('abort', onGone, { once: true });
		if (clientGone?.aborted) onGone();
		let created!: (job: Job) => void;
		const written = new Promise<Job>((resolve) => (created = resolve));
		const answer = this.drive(id, generation, { ...caller, clientGone: controller.signal }, controller, created);
		void answer.then(
			() => clientGone?.removeEventListener('abort', onGone),
			() => clientGone?.removeEventListener('abort', onGone),
		);
		// Refused before the job was written (a spent budget, a model the key may not use): no job.
		const job = await Promise.race([written, answer.then(() => written)]);
		return { job, answer };
	}

	/** Cancels a job of `apiKeyId`; its state after (its final one if it had ended), or null when it has none. */
	async cancel(id: string, apiKeyId: string): Promise<Job | null> {
		const canceled = await this.store.cancel(id, apiKeyId, new Date(), this.options.deliveries?.writes);
		if (!canceled) return null;
		const { job, canceledNow } = canceled;
		if (!canceledNow) return job;
		await this.delivering(job);
		// Stopped here when it runs here; the host is told either way, so its job stops being billed.
		this.running.get(id)?.controller.abort(new DOMException('the job was canceled', 'AbortError'));
		if (job.hostJob) {
			await this.options
				.hostOf(job.model)
				?.cancel?.(job.hostJob)
				.catch((error: unknown) => this.options.log.error({ err: error, job: id }, "canceling a host's job failed"));
		}
		await this.tellEnded(job);
		return job;
	}

	/**
	 * Takes over the jobs of processes that died; answers how many: at once those of a process of
	 * this machine that is no longer running (a restart after a crash), the others once their lease ran out.
	 */
	async recover(): Promise<number> {
		if (this.closed) return 0;
		const now = new Date();
		const leaseUntil = new Date(now.getTime() + this.leaseMs);
		const gone = (await this.store.holders()).filter((holder) => holderGone(holder, this.owner));
		const claimed: Job[] = [];
		for (const holder of gone) claimed.push(...(await this.store.claimFrom(holder, this.owner, leaseUntil, RECOVERY_BATCH)));
		claimed.push(...(await this.store.claimAbandoned(this.owner, leaseUntil, now, RECOVERY_BATCH)));
		for (const job of claimed) await this.takeOver(job);
		return claimed.length;
	}

	/**
	 * Stops taking jobs over and waits for the running ones to end, at most `waitMs`: a job still
	 * running then is left to its lease, and the next start (or another replica) follows it on.
	 */
	async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
		this.closed = true;
		this.endsAwaitingSpace.close();
		let timer: NodeJS.Timeout | undefined;
		const waited = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), waitMs)));
		const outcome = await Promise.race([Promise.all([...this.running.values()].map((job) => job.ended)), waited]);
		clearTimeout(timer);
		if (outcome === 'timed out') this.options.log.info({ jobs: [...this.running.keys()] }, 'jobs still running at close are left to the next start');
		// Nothing runs here any more: a later start in this process may take what is left over at once.
		else holderStopped(this.owner);
	}

	/**
	 * A job claimed from a process that died: one its host named is followed to the host's end, one
	 * it did not name ends as interrupted, its charge released.
	 */
	private async takeOver(job: Job): Promise<void> {
		const { log } = this.options;
		const provider = this.options.hostOf(job.model);
		// Its end is known here and waits for space: it is written as it happened, not as interrupted.
		if (this.endsAwaitingSpace.has(job.id)) return;
		if (!job.hostJob || !provider?.resume) {
			log.info({ job: job.id }, 'a job cut off before its host named it ends as interrupted');
			await this.finish(job.id, { status: 'failed', error: INTERRUPTED.toBody().error, finishedAt: new Date(), release: true });
			return;
		}
		log.info({ job: job.id, provider: job.hostJob.provider }, "following a job left by a process that stopped to its host's end");
		// Already charged at its admission, before the restart: it stays charged when the job
		// succeeds, and is released (once: the row says whether it was) when it does not.
		const controller = new AbortController();
		const stopLease = this.keepLease(job.id, job.apiKeyId, controller);
		const reservation: BudgetReservation = { settle: async () => undefined, release: () => this.store.release(job.id) };
		const caller = { apiKeyId: job.apiKeyId, apiKey: ownerPolicy(job.apiKeyId), clientGone: controller.signal, resume: { job: job.hostJob, reservation } };
		void this.drive(job.id, job.request as unknown as JobRequest, caller, controller)
			.catch(() => undefined)
			.finally(stopLease);
	}

	/**
	 * Runs a generation as job `id` and writes its end, keeping track of it while it runs.
	 * `created` is told when the job is written (a resumed one was written before).
	 */
	private drive(id: string, generation: JobRequest, caller: GenerationCaller, controller: AbortController, created?: (job: Job) => void): Promise<JobAnswer> {
		// A span of the request's trace, or of its own for a job taken over after a restart.
		const attributes = { 'imagegen.job.id': id, 'gen_ai.request.model': generation.model, 'imagegen.job.resumed': caller.resume !== undefined };
		const run = inSpan('generation job', { attributes }, () => this.run(id, generation, caller, controller, created));
		const tracked = { controller, ended: run.catch(() => undefined) };
		this.running.set(id, tracked);
		void tracked.ended.then(() => this.running.delete(id));
		return run;
	}

	private async run(id: string, generation: JobRequest, caller: GenerationCaller, controller: AbortController, created?: (job: Job) => void): Promise<JobAnswer> {
		let stopLease = () => undefined as void;
		let ended = false;
		const succeeded = async (answer: JobAnswer, usageLine: JobUsageLine) => {
			if (await this.finishSuccess(id, this.successOf(answer, generation, caller), usageLine)) {
				ended = true;
				return;
			}
			// Canceled or taken over as the success was written: none of it was; the run stops as the cancel or the take-over says.
			await this.stopAsNoLongerOurs(id, caller.apiKeyId, controller);
			throw controller.signal.reason;
		};
		try {
			const answer = await this.runFor(generation, {
				...caller,
				jobId: id,
				clientGone: controller.signal,
				keepsInlineImages: caller.keepsInlineImages ?? true,
				succeeded,
				hostJobStarted: (job) => this.store.hostJobStarted(id, job),
				// A read, not a write: a cancel that reached another process shows in the row.
				stillWanted: async () => {
					if (controller.signal.aborted) return false;
					if (await this.store.isRunning(id, this.owner)) return true;
					await this.stopAsNoLongerOurs(id, caller.apiKeyId, controller);
					return false;
				},
				...(created && {
					reserved: async (reservation) => {
						const job = await this.create(id, caller.apiKeyId, reservation);
						stopLease = this.keepLease(id, caller.apiKeyId, controller);
						created(job);
					},
				}),
			});
			if (!ended) throw new Error('the generation ended without writing its end');
			return answer;
		} catch (error) {
			const status = controller.signal.aborted && !(error instanceof ImageGenError && error.code === 'generation_timeout') ? 'canceled' : 'failed';
			const end: JobEnd = { status, error: jobError(error), finishedAt: new Date() };
			await this.finish(id, end).catch((failure: unknown) => this.endsAwaitingSpace.failed(id, end, failure));
			throw error;
		} finally {
			stopLease();
		}
	}

	/** Images go to the generation runner, a video to the video runner. */
	private runFor(request: JobRequest, caller: RunCaller): Promise<JobAnswer> {
		return isVideoModelId(request.model) ? this.options.runVideo(request as VideoRequest, caller) : this.options.runGeneration(request as GenerationRequest, caller);
	}

	/** Writes the job whose price the budget reserved, owned by this process; answers it as written. */
	private async create(id: string, apiKeyId: string, reservation: { generation: JobRequest; reservedUsd: number }): Promise<Job> {
		const { generation, reservedUsd } = reservation;
		const job = {
			id,
			apiKeyId,
			model: generation.model,
			request: storedRequest(generation),
			webhookUrl: (generation as { webhook_url?: string }).webhook_url ?? null,
			chargedMicros: toMicros(reservedUsd),
			createdAt: new Date(),
			owner: this.owner,
			leaseUntil: new Date(Date.now() + this.leaseMs),
		};
		await this.store.create(job);
		return { ...job, status: 'running', hostJob: null, result: null, error: null, finishedAt: null };
	}

	/** A success's end: its answer kept unless nobody can ask for it again (see JobCaller `keepsInlineImages`). */
	private successOf(answer: JobAnswer, generation: JobRequest, caller: GenerationCaller): JobEnd {
		if (!('data' in answer)) return { status: 'succeeded', result: { body: JSON.stringify(answer) }, finishedAt: new Date() };
		const { body, inlineFiles } = inlineAnswerBody(answer);
		const kept = caller.keepsInlineImages !== false || (generation as GenerationRequest).response_format !== 'b64_json';
		return { status: 'succeeded', ...(kept && { result: { body, ...(inlineFiles.length > 0 ? { inlineFiles } : {}) } }), finishedAt: new Date() };
	}

	/**
	 * Writes the end with what it decides — the end's own `alongside` (a usage line) and its webhook
	 * delivery — in one transaction (null, and none of it written, when the job was canceled or
	 * taken over meanwhile), then tells the listeners.
	 */
	private async finish(id: string, end: JobEnd): Promise<Job | null> {
		const own = end.alongside;
		const writes = this.options.deliveries?.writes;
		const alongside = writes && own ? (ended: Job) => [...own(ended), ...writes(ended)] : (writes ?? own);
		const job = await this.store.finish(id, this.owner, { ...end, ...(alongside && { alongside }) });
		if (!job) return null;
		await this.delivering(job);
		await this.tellEnded(job);
		return job;
	}

	/**
	 * A success's end and its usage line in one transaction (run-generation.ts `succeeded`). One the
	 * transaction cannot take — the ledger's table failing while the rest of the database works —
	 * is written alone, and its line recorded apart by the ledger, which keeps it until it lands. A
	 * full database is left to the failure's end (the job ends insufficient_storage).
	 */
	private async finishSuccess(id: string, success: JobEnd, usageLine: JobUsageLine): Promise<Job | null> {
		try {
			return await this.finish(id, { ...success, alongside: () => usageLine.statements });
		} catch (error) {
			if (isStorageFull(error)) throw error;
			this.options.log.error({ err: error, job: id }, 'the end of a job could not be written with its usage line: written alone, the line recorded apart');
			const job = await this.finish(id, success);
			if (job) await usageLine.recordApart();
			return job;
		}
	}

	/** The end committed with its delivery: the outbox may send it now. */
	private async delivering(job: Job): Promise<void> {
		await this.options.deliveries?.committed(job).catch((error: unknown) => this.options.log.error({ err: error, job: job.id }, 'waking the webhook delivery of a job failed'));
	}

	/** Renews the job's lease while it runs; a job that is no longer this process's running one is stopped. */
	private keepLease(id: string, apiKeyId: string, controller: AbortController): () => void {
		const timer = setInterval(() => {
			this.store.renew(id, this.owner, new Date(Date.now() + this.leaseMs)).then(
				async (renewed) => {
					if (!renewed) await this.stopAsNoLongerOurs(id, apiKeyId, controller);
				},
				(error: unknown) => this.options.log.error({ err: error, job: id }, 'renewing a job lease failed'),
			);
		}, this.leaseMs / 3);
		timer.unref();
		return () => clearInterval(timer);
	}

	/**
	 * A job that is no longer this process's running one: canceled (by any process), which stops it
	 * as a cancel; or taken over by another process after this one lost its lease while alive, which
	 * stops it quietly (JobTakenOver): that process follows the host's job and holds the charge.
	 */
	private async stopAsNoLongerOurs(id: string, apiKeyId: string, controller: AbortController): Promise<void> {
		if (controller.signal.aborted) return;
		const job = await this.store.get(id, apiKeyId).catch(() => null);
		if (job?.status === 'canceled') controller.abort(new DOMException('the job was canceled', 'AbortError'));
		else {
			this.options.log.info({ job: id }, 'a job this process lost the lease of is followed by another process now: stopped here');
			controller.abort(new JobTakenOver());
		}
	}

	private async tellEnded(job: Job): Promise<void> {
		if (this.listeners.length === 0) return;
		// Read back and encoded only for a listener that wants the bytes: the outbox never sends them,
		// and reading each inline image back cost every job a file open and read.
		const { inlineBase64 } = this.options;
		const imagesOf = inlineBase64 && ((fileId: string) => inlineBase64(fileId, job.apiKeyId));
		const made = new Map<boolean, Promise<GenerationObject>>();
		const objectOf = (withImages: boolean) => made.get(withImages) ?? made.set(withImages, generationObject(job, withImages ? imagesOf : undefined)).get(withImages)!;
		for (const listener of this.listeners) {
			const generation = await objectOf(listener.wantsInlineImages === true && imagesOf !== undefined);
			await listener
				.jobEnded({ apiKeyId: job.apiKeyId, ...(job.webhookUrl ? { webhookUrl: job.webhookUrl } : {}), generation, job })
				.catch((error: unknown) => this.options.log.error({ err: error, job: job.id }, 'telling of a job that ended failed'));
		}
	}
}

/** A resumed job was admitted under its key's policy already: nothing is checked again. */
function ownerPolicy(apiKeyId: string): ApiKeyPolicy {
	return { id: apiKeyId, managed: false, models: null, rateLimitPerMinute: null, budget: null };
}

