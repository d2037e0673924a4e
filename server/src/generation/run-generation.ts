/**
 * One generation, from a validated request to the answer body: the caller's key policy is
 * enforced (allowed models, budget: generation/key-policy.ts), the model's provider draws, every
 * image is normalized and stored under our retention (an inline one too: it is sent from storage),
 * and usage is recorded.
 * Every way in (HTTP, MCP) runs generations through this, so every one obeys the key's limits.
 * The time limit and the client going away both stop the provider; they end in different errors.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { limitedSignal } from '../media/limited-signal';
import { releaseBytes } from '../media/release-bytes';
import { roundUsd } from '../../../core/units';
import type { GeneratedImage, GenerationResponse } from '../../../core/api';
import { MODELS, SEED_MAX } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import { ImageWork } from '../media/image-work';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { PriceOverrides } from '../config';
import type { HostedFiles } from '../storage/hosted-files';
import { InlineBytes, InlineFile } from '../storage/inline-answer';
import type { UsageLedger } from '../usage/usage-ledger';
import { inputImageLoader, type InputImageSource } from './input-images';
import { checkModelAllowed, type BudgetGate, type BudgetHold } from './key-policy';
import { normalizeOutput } from './normalize-output';
import { UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import { sniffMedia } from '../../../core/media';
import type { ServiceMetrics } from '../metrics/service-metrics';
import { NO_METRICS } from '../metrics/service-metrics';
import type { GenerationContext, GenerationProvider, HostJobRef, ProviderAttempt, ProviderImage, SettledRequest } from './provider';
import { chainMembers } from './provider-chain';
import { checkProviderLimits, specInForce } from './provider-limits';
import { settleAspectRatio } from './input-shape';
import type { ProviderTable } from './providers';

/** What a generation needs from the service, each behind its interface. */
export interface GenerationServices {
	providers: ProviderTable;
	prices: PriceOverrides;
	timeoutMs: number;
	inputs: InputImageSource;
	hostedFiles: HostedFiles;
	usageLedger: UsageLedger;
	/** The bounded image queue shared with uploads; its own one (same pixel limit) when not given. */
	imageWork?: ImageWork;
	/** Reserves a budgeted key's price before the provider runs. */
	budgets: BudgetGate;
	/** Where a usage line that could not be made durable is reported (it is retried meanwhile). */
	log: { error(details: object, message: string): void };
	/** Counts generations, their cost and provider failures; none when absent. */
	metrics?: ServiceMetrics;
	/** Marks every image before it is stored or inlined; unmarked when absent. */
	provenance?: ProvenanceMarker;
}

export interface GenerationCaller {
	apiKeyId: string;
	/** The caller's key: its models and budget are enforced here (request.apiKey). */
	apiKey: ApiKeyPolicy;
	/** Aborted when the client goes away, so providers stop working for nobody. */
	clientGone: AbortSignal;
	/**
	 * The answer will be replayed (an `Idempotency-Key`): inline images are stored, and sent from
	 * storage now and on every replay. Otherwise they go out from memory and are never stored.
	 */
	keepsInlineImages?: boolean;
	/**
	 * Told once the budget admitted the generation (what it charged: the price of its n images, or 0 for a key
	 * without a budget), with the request as the provider will get it (its seed drawn), before the
	 * provider is called: a job is written here (jobs/job-runner.ts). A failure ends the generation
	 * uncharged.
	 */
	admitted?(admission: { generation: GenerationRequest; chargedUsd: number }): Promise<void>;
	/** Passed on to the provider (generation/provider.ts `hostJobStarted`). */
	hostJobStarted?(job: HostJobRef): Promise<void>;
	/**
	 * Asked once the images exist, before anything is charged: false (the job was canceled
	 * meanwhile) ends the generation as cancelled and uncharged.
	 */
	stillWanted?(): Promise<boolean>;
	/**
	 * Told the answer in the same turn as its usage line is handed to the ledger, so that what the
	 * caller writes of it (a job's end) goes to the disk in the same commit; awaited before the
	 * answer is returned, and its failure fails the generation.
	 */
	succeeded?(answer: GenerationAnswer): Promise<void>;
	/**
	 * Follows a host's job accepted before a restart instead of creating one (provider `resume`);
	 * `hold` stands for what the budget admitted then (nothing is admitted again).
	 */
	resume?: { job: HostJobRef; hold: BudgetHold | null };
}

/** An inline image as the runner answers it: its stored file or its bytes, sent as `b64_json` (storage/inline-answer.ts). */
export type InlineGeneratedImage = Omit<Extract<GeneratedImage, { b64_json: string }>, 'b64_json'> & { b64_json: InlineFile | InlineBytes };

/** The answer of a generation; written as JSON it is the API's GenerationResponse. */
export interface GenerationAnswer extends Omit<GenerationResponse, 'data'> {
	data: Array<Exclude<GeneratedImage, { b64_json: string }> | InlineGeneratedImage>;
}

export type GenerationRunner = (generation: GenerationRequest, caller: GenerationCaller) => Promise<GenerationAnswer>;

/**
 * Image i of a request for n is drawn with seed + i, wrapped into the seed range so every host takes it.
 */
function seedOf(seed: number, index: number): number {
	return (seed + index) % (SEED_MAX + 1);
}

/** How long an answer waits for its usage line to be durable when the ledger is failing. */
const USAGE_WAIT_MS = 2_000;

export function createGenerationRunner(services: GenerationServices): GenerationRunner {
	const { providers, prices, timeoutMs, inputs, hostedFiles, usageLedger, budgets } = services;
	const imageWork = services.imageWork ?? new ImageWork({ maxPixels: inputs.maxImagePixels ?? 100_000_000 });
	const metrics = services.metrics ?? NO_METRICS;
	const provenance = services.provenance ?? UNMARKED;

	const observed: GenerationRunner = async (request, caller) => {
		const started = performance.now();
		const seen: Observed = { provider: 'none' };
		const seconds = () => (performance.now() - started) / 1000;
		try {
			const response = await run(request, caller, seen);
			metrics.generation({ model: request.model, provider: seen.provider, outcome: 'success', seconds: seconds(), costUsd: response.usage.cost_usd });
			return response;
		} catch (error) {
			metrics.generation({ model: request.model, provider: seen.provider, outcome: errorCode(error), seconds: seconds(), costUsd: 0 });
			throw error;
		}
	};

	const run = async (request: GenerationRequest, caller: GenerationCaller, seen: Observed): Promise<GenerationAnswer> => {
		// Drawn here when absent, so every host gets one and the answer can say which it was.
		const generation = { ...request, seed: request.seed ?? randomInt(0, SEED_MAX + 1) };
		const seed = generation.seed;
		checkModelAllowed(caller.apiKey, generation.model);
		const provider = providers[generation.model];
		checkProviderLimits(generation, provider);
		const price = prices[generation.model] ?? MODELS[generation.model].priceUsd;
		// `n` images: one provider call each; the budget admits all of them or none.
		const count = generation.n ?? 1;
		const hold = caller.resume ? caller.resume.hold : await budgets.admit(caller.apiKey, roundUsd(price * count));
		if (caller.admitted) {
			try {
				await caller.admitted({ generation, chargedUsd: hold ? roundUsd(price * count) : 0 });
			} catch (error) {
				await releaseHold(hold, services.log);
				throw error;
			}
		}
		const data: GenerationAnswer['data'] = [];
		// Files of the images made so far: removed again if a later one fails (all or nothing).
		const storedIds: string[] = [];
		let servedBy = '';
		// Cleared when the generation ends, with its tie to the client (media/limited-signal.ts).
		const limit = limitedSignal(caller.clientGone, timeoutMs, () => new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'));
		const deadline = Date.now() + timeoutMs;
		const { signal } = limit;
		const stopped = () => stoppedError(signal, timeoutMs, provider);
		try {
			seen.provider = chainMembers(provider)[0]!;
			const { settled, loadInputImage } = await settleAspectRatio(generation, specInForce(generation.model, provider), inputImageLoader(generation, inputs, signal));
			// A job of several images is not followed again after a restart (it ends refunded): the
			// host's job named is only one of its images.
			const hostCaller = count === 1 ? caller : { ...caller, hostJobStarted: undefined };
			for (let index = 0; index < count; index++) {
				const imageSeed = seedOf(seed, index);
				const one: SettledRequest = { ...settled, seed: imageSeed };
				delete one.n;
				const ran = await runProvider(provider, one, { loadInputImage, imageWork, signal, deadline, stopped, metrics, seen, caller: hostCaller });
				servedBy ||= ran.servedBy;
				// A host may hand out more than it was asked for; the client asked for (and the budget
				// reserved) one image per call: the rest are neither fetched, hosted nor charged.
				const output = ran.outputs[0]!;
				const { bytes, fresh } = await providerBytes(output, ran.servedBy, inputs, signal, stopped, metrics);
				const image = await normalizeOutput(bytes, settled, ran.servedBy, imageWork, signal);
				const marked = await provenance.markGenerated({
					...image,
					model: generation.model,
					prompt: generation.prompt,
					source: image.bytes === bytes ? undefined : { bytes, media: sniffMedia(bytes)!, changes: image.changes },
				});
				// Each copy this generation made is given back once read, not when V8 next collects
				// (media/release-bytes.ts); the provider's bytes too when they were made for this answer.
				if (image.bytes !== bytes && image.bytes !== marked.bytes) releaseBytes(image.bytes);
				if (fresh && marked.bytes !== bytes) releaseBytes(bytes);
				const ours = fresh || marked.bytes !== bytes;
				if (generation.response_format === 'b64_json' && !caller.keepsInlineImages) {
					// Nobody will replay this answer: the marked image goes out from memory, in pieces.
					data.push({ b64_json: new InlineBytes(marked.bytes, { releaseWhenSent: ours }), seed: imageSeed, provenance: marked.provenance });
					continue;
				}
				// An inline image is stored too (its job keeps it, and a replay sends it from storage in pieces):
				// neither the answer nor its records hold it whole. Its row is not synced on its own: the
				// usage line below is made durable before the answer, and its sync of the same database
				// covers this row. An inline image's bytes are not synced at all (2 fsyncs, ≈ 0.3 ms of CPU
				// per answer): the answer goes out from memory, and after a power cut a replay that finds
				// them missing or short answers as for an expired file, never a cut answer. A hosted one's
				// are: its URL is the only way to them.
				const inline = generation.response_format === 'b64_json';
				const stored = await hostedFiles.putBuffer(marked.bytes, image.media, caller.apiKeyId, marked.provenance, { durable: false, ...(inline ? { synced: false } : {}) });
				storedIds.push(stored.id);
				if (generation.response_format === 'b64_json') {
					// The first answer goes out from the bytes at hand (no read back), replays and the job's from the file.
					data.push({ b64_json: new InlineFile(stored.id, new InlineBytes(marked.bytes, { releaseWhenSent: ours })), seed: imageSeed, provenance: marked.provenance });
				} else {
					if (ours) releaseBytes(marked.bytes);
					data.push({ url: hostedFiles.publicUrl(stored), expires_at: stored.expiresAt.toISOString(), seed: imageSeed, provenance: marked.provenance });
				}
			}
			if (caller.stillWanted && !(await caller.stillWanted())) throw cancelled();
		} catch (error) {
			await releaseHold(hold, services.log);
			await removeImages(hostedFiles, storedIds, caller.apiKeyId, services.log);
			// The limit or the client can stop any step after the host answered (a wait for the image
			// queue, a re-encode, the write): that is a time-out or a cancellation, never a 500.
			if (!(error instanceof ImageGenError) && signal.aborted) throw stopped();
			throw error;
		} finally {
			limit.done();
		}
		const costUsd = roundUsd(price * data.length);
		await settleHold(hold, costUsd, services.log);
		const answer: GenerationAnswer = {
			created: Math.floor(Date.now() / 1000),
			model: generation.model,
			output_format: generation.output_format,
			data,
			usage: { images: data.length, cost_usd: costUsd },
		};
		const recorded = usageLedger
			.record({ apiKeyId: caller.apiKeyId, model: generation.model, images: data.length, costUsd, requestId: randomUUID(), provider: servedBy })
			.catch((error: unknown) => services.log.error({ err: error }, 'recording usage failed'));
		const told = caller.succeeded?.(answer);
		// Awaited below, after the usage line: its failure meanwhile is not an unhandled rejection.
		told?.catch(() => undefined);
		// The billing line is durable before the answer, so a crash right after it loses nothing and
		// /v1/usage on any replica already counts it. While the ledger's engine fails, the line stays
		// queued (retried, reported by /healthz) and the answer does not wait longer than this.
		let gaveUp: NodeJS.Timeout | undefined;
		await Promise.race([recorded, new Promise((resolve) => (gaveUp = setTimeout(resolve, USAGE_WAIT_MS)))]);
		clearTimeout(gaveUp);
		await told;
		return answer;
	};
	return observed;
}

/** A generation that failed at image k hands out none: the k − 1 made before are not left behind. */
async function removeImages(hostedFiles: HostedFiles, ids: readonly string[], apiKeyId: string, log: GenerationServices['log']): Promise<void> {
	for (const id of ids) await hostedFiles.remove(id, apiKeyId).catch((error: unknown) => log.error({ err: error, id }, 'removing an image of a failed generation failed'));
}

/** A failed generation costs nothing; a release that fails only lets the reservation run out its lease. */
async function releaseHold(hold: BudgetHold | null, log: GenerationServices['log']): Promise<void> {
	await hold?.release().catch((error: unknown) => log.error({ err: error }, 'releasing a budget reservation failed'));
}

/** The images exist: the answer goes out even if the charge cannot be written (reported for the operator). */
async function settleHold(hold: BudgetHold | null, costUsd: number, log: GenerationServices['log']): Promise<void> {
	await hold?.settle(costUsd).catch((error: unknown) => log.error({ err: error, costUsd }, 'charging a budget failed'));
}

/** What the metrics learn while a generation runs: the host that served, or the one that failed last. */
interface Observed {
	provider: string;
}

function errorCode(error: unknown): string {
	return error instanceof ImageGenError ? error.code : 'internal_error';
}

interface ProviderRun {
	caller: Pick<GenerationCaller, 'hostJobStarted' | 'resume'>;
	loadInputImage: (index: number) => Promise<Buffer>;
	imageWork: ImageWork;
	signal: AbortSignal;
	deadline: number;
	stopped: () => ImageGenError;
	metrics: ServiceMetrics;
	seen: Observed;
}

/**
 * Runs the model's provider (a single host or a fallback chain) and reports every host's failure
 * to the metrics. Answers the images and the host that served them.
 */
async function runProvider(
	provider: GenerationProvider,
	generation: SettledRequest,
	{ loadInputImage, imageWork, signal, deadline, stopped, metrics, seen, caller }: ProviderRun,
): Promise<{ outputs: ProviderImage[]; servedBy: string }> {
	const attempts: ProviderAttempt[] = [];
	const members = chainMembers(provider);
	try {
		const outputs = await generateOnce(provider, generation, { loadInputImage, imageWork, deadline, caller }, signal, stopped, (attempt) => attempts.push(attempt));
		const served = attempts.find((attempt) => attempt.error === undefined)?.provider ?? members[0]!;
		countFailures(attempts, metrics);
		seen.provider = served;
		return { outputs, servedBy: served };
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
	{ loadInputImage, imageWork, deadline, caller }: Pick<ProviderRun, 'loadInputImage' | 'imageWork' | 'caller'> & { deadline: number },
	signal: AbortSignal,
	stopped: () => ImageGenError,
	attempted: (attempt: ProviderAttempt) => void,
): Promise<ProviderImage[]> {
	let fail: () => void = () => undefined;
	const aborted = new Promise<never>((_, reject) => {
		fail = () => reject(stopped());
		if (signal.aborted) fail();
		else signal.addEventListener('abort', fail, { once: true });
	});
	try {
		const context: GenerationContext = { signal, deadline, loadInputImage, attempted, imageWork, ...(caller.hostJobStarted ? { hostJobStarted: caller.hostJobStarted } : {}) };
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
function stoppedError(signal: AbortSignal, timeoutMs: number, provider: GenerationProvider): ImageGenError {
	const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
	return timedOut ? new ImageGenError(504, `The ${provider.name} provider did not finish within ${timeoutMs / 1000} s`, { code: 'generation_timeout' }) : cancelled();
}

function cancelled(): ImageGenError {
	return new ImageGenError(502, 'The generation was cancelled because the client went away', { code: 'cancelled' });
}

async function providerBytes(
	output: ProviderImage,
	provider: string,
	inputs: InputImageSource,
	signal: AbortSignal,
	stopped: () => ImageGenError,
	metrics: ServiceMetrics,
): Promise<{ bytes: Buffer; fresh: boolean }> {
	if ('bytes' in output) return { bytes: output.bytes, fresh: output.fresh === true };
	try {
		return { bytes: await inputs.fetchRemote(new URL(output.url), { field: 'output', maxBytes: inputs.maxInputImageBytes * 2, signal }), fresh: true };
	} catch (error) {
		// A download cut short by our own limit is a time-out, not a broken output.
		const failure = signal.aborted
			? stopped()
			: new ImageGenError(502, `The ${provider} provider's image could not be downloaded${error instanceof ImageGenError ? ` (${error.code})` : ''}`, {
					code: 'upstream_failed',
					cause: error,
				});
		if (failure.code !== 'cancelled') metrics.providerError(provider, failure.code);
		throw failure;
	}
}
