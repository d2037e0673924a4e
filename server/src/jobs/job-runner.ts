/**
 * Every generation as a durable job, around the one generation runner (generation/run-generation.ts):
 * the job is written once the budget admitted it and before the provider is called, the host's job
 * id as soon as the host names it, and its end once, after which the JobEndListeners are told.
 * While it runs, this process renews its lease; a lease that ran out means the process died, and
 * `recover` (at start and periodically, on any replica) takes such jobs over: one the host named is
 * followed to its end (never created again) and charged once, one it did not name ends `failed`
 * with code `interrupted`, its charge given back.
 *
 * A cancel reaches the store first (the answer already reads `canceled`); the process running the
 * job stops it at once, another one asks the host to cancel its job. A run that ends after its job
 * was canceled charges nothing and leaves the job as the cancel wrote it.
 */
import { randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { toMicros } from '../../../core/units';
import type { GenerationRequest } from '../../../core/schemas';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { BudgetHold } from '../generation/key-policy';
import type { ProviderTable } from '../generation/providers';
import type { GenerationAnswer, GenerationCaller, GenerationRunner } from '../generation/run-generation';
import { inlineAnswerBody } from '../storage/inline-answer';
import { generationObject } from './generation-object';
import type { GenerationObject, Job, JobEnd, JobEndListener, JobError, JobStore } from './job-store';

/** How long a job stays this process's without a renewal; renewed every third of it. */
export const JOB_LEASE_MS = 60_000;

/** How long a close waits for the jobs running here (a synchronous request's is waited for by its request). */
const CLOSE_WAIT_MS = 10_000;

/** Jobs taken over per recovery pass; the rest wait for the next. */
const RECOVERY_BATCH = 100;

export interface JobRunnerOptions {
	store: JobStore;
	runGeneration: GenerationRunner;
	providers: ProviderTable;
	listeners?: readonly JobEndListener[];
	/** Base64 of an inline image's stored file, for the listeners' generation objects. */
	inlineBase64?: (fileId: string, apiKeyId: string) => Promise<string>;
	log: { error(details: object, message: string): void; info(details: object, message: string): void };
	leaseMs?: number;
}

/** The caller of a job: as of a generation, without what the runner supplies itself. */
export type JobCaller = Pick<GenerationCaller, 'apiKeyId' | 'apiKey'> & {
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
	answer: Promise<GenerationAnswer>;
}

export interface JobRunner {
	/**
	 * Starts a job and answers once it is written (the provider is being called). Throws without a
	 * job what is refused before: a model the key may not use, a spent budget, a malformed request.
	 */
	start(generation: GenerationRequest, caller: JobCaller): Promise<StartedJob>;
	/** Cancels a job of `apiKeyId`; its state after (its final one if it had ended), or null when it has none. */
	cancel(id: string, apiKeyId: string): Promise<Job | null>;
	/** Takes over the jobs of processes that died; answers how many. */
	recover(): Promise<number>;
	/**
	 * Stops taking jobs over and waits for the running ones to end, at most `waitMs`: a job still
	 * running then is left to its lease, and the next start (or another replica) follows it on.
	 */
	close(waitMs?: number): Promise<void>;
}

interface Running {
	controller: AbortController;
	ended: Promise<unknown>;
}

/** What the error of a generation says in its job. */
function jobError(error: unknown): JobError {
	const known = error instanceof ImageGenError ? error : new ImageGenError(500, 'Internal error', { code: 'internal_error' });
	return known.toBody().error;
}

const INTERRUPTED = new ImageGenError(500, 'The generation was cut off by a restart before its host named it, so it cannot be followed; nothing was charged', {
	code: 'interrupted',
});

/** 122 random bits: randomUUID draws from a pool, where randomBytes makes a system call per id. */
export function newJobId(): string {
	return `gen_${randomUUID().replaceAll('-', '')}`;
}

export function createJobRunner(options: JobRunnerOptions): JobRunner {
	const { store, runGeneration, providers, log } = options;
	const listeners = options.listeners ?? [];
	const leaseMs = options.leaseMs ?? JOB_LEASE_MS;
	/** This process, as the owner of the jobs it runs. */
	const owner = randomUUID();
	const running = new Map<string, Running>();
	let closed = false;

	const ended = async (job: Job) => {
		if (listeners.length === 0) return;
		// Read back and encoded only for a listener that wants the bytes: the outbox never sends them,
		// and reading each inline image back cost every job a file open and read.
		const inlineBase64 = options.inlineBase64 && ((fileId: string) => options.inlineBase64!(fileId, job.apiKeyId));
		const made = new Map<boolean, Promise<GenerationObject>>();
		const objectOf = (withImages: boolean) => made.get(withImages) ?? made.set(withImages, generationObject(job, withImages ? inlineBase64 : undefined)).get(withImages)!;
		for (const listener of listeners) {
			const generation = await objectOf(listener.wantsInlineImages === true && inlineBase64 !== undefined);
			await listener
				.jobEnded({ apiKeyId: job.apiKeyId, ...(job.webhookUrl ? { webhookUrl: job.webhookUrl } : {}), generation })
				.catch((error: unknown) => log.error({ err: error, job: job.id }, 'telling of a job that ended failed'));
		}
	};

	/** Writes the end (null when the job was canceled or taken over meanwhile) and tells the listeners. */
	const finish = async (id: string, end: JobEnd): Promise<Job | null> => {
		const job = await store.finish(id, owner, end);
		if (job) await ended(job);
		return job;
	};

	/** Renews the job's lease while it runs; a job that is no longer this process's running one is stopped. */
	const keepLease = (id: string, controller: AbortController) => {
		const timer = setInterval(() => {
			store.renew(id, owner, new Date(Date.now() + leaseMs)).then(
				(renewed) => {
					if (!renewed) controller.abort(new DOMException('the job was canceled', 'AbortError'));
				},
				(error: unknown) => log.error({ err: error, job: id }, 'renewing a job lease failed'),
			);
		}, leaseMs / 3);
		timer.unref();
		return () => clearInterval(timer);
	};

	/**
	 * Runs a generation as job `id` and writes its end. `created` is told when the job is written
	 * (a resumed one was written before).
	 */
	const drive = (id: string, generation: GenerationRequest, caller: GenerationCaller, controller: AbortController, created?: (job: Job) => void): Promise<GenerationAnswer> => {
		let stopLease = () => undefined as void;
		let finished: Promise<unknown> | undefined;
		// Written as the runner records the usage line, so both share one commit (run-generation.ts `succeeded`).
		const succeeded = async (answer: GenerationAnswer) => {
			const { body, inlineFiles } = inlineAnswerBody(answer);
			const kept = caller.keepsInlineImages !== false || generation.response_format !== 'b64_json';
			finished = finish(id, { status: 'succeeded', ...(kept && { result: { body, ...(inlineFiles.length > 0 ? { inlineFiles } : {}) } }), finishedAt: new Date() });
			await finished;
		};
		const run = (async () => {
			try {
				const answer = await runGeneration(generation, {
					...caller,
					clientGone: controller.signal,
					keepsInlineImages: caller.keepsInlineImages ?? true,
					succeeded,
					hostJobStarted: (job) => store.hostJobStarted(id, job),
					// A read, not a write: a cancel that reached another process shows in the row.
					stillWanted: async () => !controller.signal.aborted && (await store.isRunning(id, owner)),
					...(created && {
						admitted: async ({ generation: admitted, chargedUsd }) => {
							const job = {
								id,
								apiKeyId: caller.apiKeyId,
								model: admitted.model,
								request: admitted as unknown as Record<string, unknown>,
								webhookUrl: (admitted as { webhook_url?: string }).webhook_url ?? null,
								chargedMicros: toMicros(chargedUsd),
								createdAt: new Date(),
								owner,
								leaseUntil: new Date(Date.now() + leaseMs),
							};
							await store.create(job);
							stopLease = keepLease(id, controller);
							created({ ...job, status: 'running', hostJob: null, result: null, error: null, finishedAt: null });
						},
					}),
				});
				await (finished ?? succeeded(answer));
				return answer;
			} catch (error) {
				const status = controller.signal.aborted && !(error instanceof ImageGenError && error.code === 'generation_timeout') ? 'canceled' : 'failed';
				await finish(id, { status, error: jobError(error), finishedAt: new Date() }).catch((failure: unknown) =>
					log.error({ err: failure, job: id }, 'writing the end of a job failed'),
				);
				throw error;
			} finally {
				stopLease();
			}
		})();
		const tracked = { controller, ended: run.catch(() => undefined) };
		running.set(id, tracked);
		void tracked.ended.then(() => running.delete(id));
		return run;
	};

	const start: JobRunner['start'] = async (generation, caller) => {
		const id = newJobId();
		const controller = new AbortController();
		const { clientGone } = caller;
		const onGone = () => controller.abort(clientGone!.reason);
		clientGone?.addEventListener('abort', onGone, { once: true });
		if (clientGone?.aborted) onGone();
		let created!: (job: Job) => void;
		const written = new Promise<Job>((resolve) => (created = resolve));
		const answer = drive(id, generation, { ...caller, clientGone: controller.signal }, controller, created);
		void answer.then(
			() => clientGone?.removeEventListener('abort', onGone),
			() => clientGone?.removeEventListener('abort', onGone),
		);
		// Refused before the job was written (a spent budget, a model the key may not use): no job.
		const job = await Promise.race([written, answer.then(() => written)]);
		return { job, answer };
	};

	const cancel: JobRunner['cancel'] = async (id, apiKeyId) => {
		const canceled = await store.cancel(id, apiKeyId, new Date());
		if (!canceled) return null;
		const { job, canceledNow } = canceled;
		if (!canceledNow) return job;
		const here = running.get(id);
		if (here) {
			here.controller.abort(new DOMException('the job was canceled', 'AbortError'));
		} else if (job.hostJob) {
			await providers[job.model]
				.cancel?.(job.hostJob)
				.catch((error: unknown) => log.error({ err: error, job: id }, "canceling a host's job failed"));
		}
		await ended(job);
		return job;
	};

	const recover: JobRunner['recover'] = async () => {
		if (closed) return 0;
		const now = new Date();
		const claimed = await store.claimAbandoned(owner, new Date(now.getTime() + leaseMs), now, RECOVERY_BATCH);
		for (const job of claimed) {
			const provider = providers[job.model];
			if (!job.hostJob || !provider?.resume) {
				log.info({ job: job.id }, 'a job cut off before its host named it ends as interrupted');
				await finish(job.id, { status: 'failed', error: INTERRUPTED.toBody().error, finishedAt: new Date(), refund: true });
				continue;
			}
			log.info({ job: job.id, provider: job.hostJob.provider }, "following a job left by a process that stopped to its host's end");
			// Already charged at its admission, before the restart: it stays charged when the job
			// succeeds, and is given back (once: the row says whether it was) when it does not.
			const controller = new AbortController();
			const stopLease = keepLease(job.id, controller);
			const hold: BudgetHold = { settle: async () => undefined, release: () => store.refund(job.id) };
			void drive(job.id, job.request as unknown as GenerationRequest, { apiKeyId: job.apiKeyId, apiKey: ownerPolicy(job.apiKeyId), clientGone: controller.signal, resume: { job: job.hostJob, hold } }, controller)
				.catch(() => undefined)
				.finally(stopLease);
		}
		return claimed.length;
	};

	return {
		start,
		cancel,
		recover,
		async close(waitMs = CLOSE_WAIT_MS) {
			closed = true;
			let timer: NodeJS.Timeout | undefined;
			const waited = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), waitMs)));
			const outcome = await Promise.race([Promise.all([...running.values()].map((job) => job.ended)), waited]);
			clearTimeout(timer);
			if (outcome === 'timed out') log.info({ jobs: [...running.keys()] }, 'jobs still running at close are left to the next start');
		},
	};
}

/** A resumed job was admitted under its key's policy already: nothing is checked again. */
function ownerPolicy(apiKeyId: string): ApiKeyPolicy {
	return { id: apiKeyId, managed: false, models: null, rateLimitPerMinute: null, budget: null };
}

