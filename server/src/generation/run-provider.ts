/**
 * One call of a model's provider (a single host or a fallback chain) inside a generation: raced
 * against the generation's time limit and its client, every host's failure counted, and a failure
 * that is not already the client's answered as the host's (502) without its internal details.
 */
import { ImageGenError } from '../../../core/errors';
import type { ImageWork } from '../media/image-work';
import type { ServiceMetrics } from '../metrics/service-metrics';
import type { GenerationContext, GenerationProvider, HostJobRef, ProviderAttempt, ProviderImage, SettledRequest } from './provider';
import { chainMembers } from './provider-chain';
import type { BudgetReservation } from './key-policy';

/** What the metrics learn while a generation runs: the host that served, or the one that failed last. */
export interface Observed {
	provider: string;
}

/** A host's job accepted before a restart, followed instead of created; `reservation`: what the budget reserved then. */
export interface ResumedHostJob {
	job: HostJobRef;
	reservation: BudgetReservation | null;
}

/** What a provider call needs of its generation besides the request. */
export interface ProviderRun {
	caller: {
		hostJobStarted?(job: HostJobRef): Promise<void>;
		resume?: ResumedHostJob;
	};
	loadInputImage: (index: number) => Promise<Buffer>;
	imageWork: ImageWork;
	signal: AbortSignal;
	deadline: number;
	stopped: () => ImageGenError;
	metrics: ServiceMetrics;
	seen: Observed;
}

/**
 * Runs the model's provider and reports every host's failure to the metrics. Answers the images,
 * the host that served them, and whether the request's seed made them (GenerationContext.seedUnused).
 */
export async function runProvider(provider: GenerationProvider, generation: SettledRequest, run: ProviderRun): Promise<{ outputs: ProviderImage[]; servedBy: string; seedUsed: boolean }> {
	const { metrics, seen } = run;
	const attempts: ProviderAttempt[] = [];
	const members = chainMembers(provider);
	let seedUsed = true;
	try {
		const outputs = await generateOnce(provider, generation, run, { attempted: (attempt) => attempts.push(attempt), seedUnused: () => void (seedUsed = false) });
		const served = attempts.find((attempt) => attempt.error === undefined)?.provider ?? members[0]!;
		countFailures(attempts, metrics);
		seen.provider = served;
		return { outputs, servedBy: served, seedUsed };
	} catch (error) {
		// Reports that arrive after the time limit has already decided are not this run's.
		const reported = attempts.slice();
		const failedAt = reported.at(-1);
		const finalReported = failedAt?.error !== undefined && (failedAt.error === error || (error as Error | undefined)?.cause === failedAt.error);
		if (!finalReported) reported.push({ provider: members[Math.min(reported.length, members.length - 1)]!, error });
		countFailures(reported, metrics);
		seen.provider = reported.at(-1)!.provider;
		throw error;
	}
}

export function errorCode(error: unknown): string {
	return error instanceof ImageGenError ? error.code : 'internal_error';
}

/** A client that went away is not the host's failure. */
function countFailures(attempts: readonly ProviderAttempt[], metrics: ServiceMetrics): void {
	for (const attempt of attempts) {
		if (attempt.error === undefined) continue;
		const code = errorCode(attempt.error);
		if (code !== 'cancelled') metrics.providerError(attempt.provider, code);
	}
}

async function generateOnce(
	provider: GenerationProvider,
	generation: SettledRequest,
	{ loadInputImage, imageWork, deadline, caller, signal, stopped }: ProviderRun,
	told: Required<Pick<GenerationContext, 'attempted' | 'seedUnused'>>,
): Promise<ProviderImage[]> {
	let fail: () => void = () => undefined;
	const aborted = new Promise<never>((_, reject) => {
		fail = () => reject(stopped());
		if (signal.aborted) fail();
		else signal.addEventListener('abort', fail, { once: true });
	});
	try {
		const context: GenerationContext = { signal, deadline, loadInputImage, imageWork, ...told, ...(caller.hostJobStarted ? { hostJobStarted: caller.hostJobStarted } : {}) };
		const { resume } = caller;
		if (resume && !provider.resume) throw new Error(`the ${provider.name} provider cannot follow a job it started before`);
		const work = resume ? provider.resume!(resume.job, context) : provider.generate(generation, context);
		const outputs = await Promise.race([work, aborted]);
		if (outputs.length === 0) {
			throw new ImageGenError(502, `The ${provider.name} provider returned no image`, { code: 'upstream_no_output' });
		}
		return outputs;
	} catch (error) {
		if (error instanceof ImageGenError) throw error;
		if (signal.aborted) throw stopped();
		// The error's own text may name internal hosts and addresses; it goes to the log as the cause.
		throw new ImageGenError(502, `The ${provider.name} provider failed`, {
			code: 'upstream_failed',
			cause: error,
		});
	} finally {
		// The signal lives as long as the time-out: a listener left on it would keep this
		// generation's images (through the race it settled) in memory until then.
		signal.removeEventListener('abort', fail);
	}
}

/** Why the signal fired: our time limit (504, like every time-out) or our client leaving. */
export function stoppedError(signal: AbortSignal, timeoutMs: number, provider: { name: string }): ImageGenError {
	const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
	return timedOut ? new ImageGenError(504, `The ${provider.name} provider did not finish within ${timeoutMs / 1000} s`, { code: 'generation_timeout' }) : cancelled();
}

export function cancelled(): ImageGenError {
	return new ImageGenError(502, 'The generation was cancelled because the client went away', { code: 'cancelled' });
}
