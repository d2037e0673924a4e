/**
 * One generation, from a validated request to the answer body, in four steps: reserve (the
 * caller's key policy: allowed models, and the price reserved in its budget: generation/key-policy.ts),
 * produce each image (the model's provider draws it; it is normalized, marked and stored under our
 * retention or sent from memory: generation/produce-image.ts), finish (the reservation settled at
 * the cost of the images made) and record (the usage line).
 * Every way in (HTTP, MCP) runs generations through this, so every one obeys the key's limits.
 * The time limit and the client going away both stop the provider; they end in different errors.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../core/errors';
import { limitedSignal } from '../media/limited-signal';
import { roundUsd } from '../../../core/units';
import type { GenerationResponse } from '../../../core/api';
import { MODELS, SEED_MAX } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import { ImageWork } from '../media/image-work';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { PriceOverrides } from '../config';
import type { HostedFiles } from '../storage/hosted-files';
import type { UsageEntry, UsageLedger } from '../usage/usage-ledger';
import { jobUsageLine, type JobUsageLine } from '../usage/job-usage-line';
import { inputImageLoader, type InputImageSource } from './input-images';
import { checkModelAllowed, type BudgetGate, type BudgetReservation } from './key-policy';
import { UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import type { ProvenanceRecordStore } from '../provenance/provenance-records';
import type { ServiceMetrics } from '../metrics/service-metrics';
import { NO_METRICS } from '../metrics/service-metrics';
import { takenOver, type GenerationProvider, type HostJobRef } from './provider';
import { chainMembers } from './provider-chain';
import { checkProviderLimits, specInForce } from './provider-limits';
import { settleAspectRatio } from './input-shape';
import type { ProviderTable } from './providers';
import type { GenerationTimings } from './generation-timings';
import { produceImage, type AnsweredImage, type ImageProduction } from './produce-image';
import { cancelled, errorCode, stoppedError, type Observed, type ResumedHostJob } from './run-provider';
import { SignedInputs } from './signed-inputs';

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
	/** Where each image's watermark payload is recorded; images of a job carry a watermark only with it. */
	provenanceRecords?: ProvenanceRecordStore;
}

export interface GenerationCaller {
	apiKeyId: string;
	/** The caller's key: its models and budget are enforced here (request.apiKey). */
	apiKey: ApiKeyPolicy;
	/** Aborted when the client goes away, so providers stop working for nobody. */
	clientGone: AbortSignal;
	/** The job the generation runs as: the provenance record of each image's watermark names it. */
	jobId?: string;
	/**
	 * The answer will be replayed (an `Idempotency-Key`): inline images are stored, and sent from
	 * storage now and on every replay. Otherwise they go out from memory and are never stored.
	 */
	keepsInlineImages?: boolean;
	/**
	 * Told once the budget reserved the generation's price (`reservedUsd`: the price of its n images,
	 * or 0 for a key without a budget), with the request as the provider will get it (its seed
	 * drawn, its aspect ratio settled), before the provider is called: a job is written here (jobs/job-runner.ts). A failure
	 * ends the generation, its reservation released.
	 */
	reserved?(reservation: { generation: GenerationRequest; reservedUsd: number }): Promise<void>;
	/** Passed on to the provider (generation/provider.ts `hostJobStarted`). */
	hostJobStarted?(job: HostJobRef): Promise<void>;
	/**
	 * Asked once the images exist, before the reservation is settled: false (the job was canceled
	 * meanwhile) ends the generation as cancelled, its reservation released.
	 */
	stillWanted?(): Promise<boolean>;
	/**
	 * Told the answer with its usage line (usage/job-usage-line.ts): the caller (a job) writes it in
	 * the transaction of its end. Awaited before the answer is returned and
	 * before the reservation is settled; its failure fails the generation (a job canceled meanwhile:
	 * nothing written, the reservation released, the images removed).
	 */
	succeeded?(answer: GenerationAnswer, usageLine: JobUsageLine): Promise<void>;
	/** Counts the host's share and the marking's time (the answer's Server-Timing); nothing is counted without it. */
	timings?: GenerationTimings;
	/**
	 * Follows a host's job accepted before a restart instead of creating one (provider `resume`);
	 * `reservation` stands for what the budget reserved then (nothing is reserved again).
	 */
	resume?: ResumedHostJob;
}

/** The answer of a generation; written as JSON it is the API's GenerationResponse. */
export interface GenerationAnswer extends Omit<GenerationResponse, 'data'> {
	data: AnsweredImage[];
}

export type GenerationRunner = (generation: GenerationRequest, caller: GenerationCaller) => Promise<GenerationAnswer>;


/** The services as the runner uses them, the optional ones given their defaults. */
type RunnerServices = GenerationServices & Required<Pick<GenerationServices, 'imageWork' | 'metrics' | 'provenance'>>;

/** The request, its seed drawn, and what it is generated with. */
interface Generation {
	request: GenerationRequest & { seed: number };
	provider: GenerationProvider;
	/** Per image, in USD. */
	price: number;
	caller: GenerationCaller;
	seen: Observed;
	/** The request as the provider gets it (its aspect ratio settled), and the loader of its inputs. */
	shaped: Awaited<ReturnType<typeof settleAspectRatio>>;
}

export function createGenerationRunner(services: GenerationServices): GenerationRunner {
	const runner: RunnerServices = {
		...services,
		imageWork: services.imageWork ?? new ImageWork({ maxPixels: services.inputs.maxImagePixels ?? 100_000_000 }),
		metrics: services.metrics ?? NO_METRICS,
		provenance: services.provenance ?? UNMARKED,
	};
	return async (request, caller) => {
		const started = performance.now();
		const seen: Observed = { provider: 'none' };
		const seconds = () => (performance.now() - started) / 1000;
		try {
			const answer = await generate(runner, request, caller, seen);
			runner.metrics.generation({ model: request.model, provider: seen.provider, outcome: 'success', seconds: seconds(), costUsd: answer.usage.cost_usd });
			return answer;
		} catch (error) {
			runner.metrics.generation({ model: request.model, provider: seen.provider, outcome: errorCode(error), seconds: seconds(), costUsd: 0 });
			throw error;
		}
	};
}

/** Reserve, produce each image, finish, record. */
async function generate(services: RunnerServices, request: GenerationRequest, caller: GenerationCaller, seen: Observed): Promise<GenerationAnswer> {
	// Drawn here when absent, so every host gets one and the answer can say which it was.
	const withSeed = { ...request, seed: request.seed ?? randomInt(0, SEED_MAX + 1) };
	checkModelAllowed(caller.apiKey, withSeed.model);
	const provider = services.providers[withSeed.model];
	checkProviderLimits(withSeed, provider);
	const price = services.prices[withSeed.model] ?? MODELS[withSeed.model].priceUsd;
	// Settled before anything is reserved: a first input that is no image is the request's 400
	// before a job exists, and the job keeps the ratio it settled to, so a resume needs no input.
	const shaped = await settleAspectRatio(withSeed, specInForce(withSeed.model, provider), inputImageLoader(withSeed, services.inputs, caller.clientGone)).catch((error: unknown) => {
		throw !(error instanceof ImageGenError) && caller.clientGone.aborted ? stoppedError(caller.clientGone, services.timeoutMs, provider) : error;
	});
	const generation: Generation = { request: withSeed, provider, price, caller, seen, shaped };
	const reservation = await reserve(services, generation);
	const { images, servedBy, storedIds } = await produceImages(services, generation, reservation);
	const answer = answerOf(generation, images);
	try {
		await record(services, generation, answer, servedBy);
	} catch (error) {
		// A job whose end could not be written (its store failing) keeps its charge and images for
		// its recovery, which ends it and releases the charge once.
		if (!caller.clientGone.aborted || error !== caller.clientGone.reason) throw error;
		// Canceled (or taken over) as its success was written: none of it was, so none of it is kept.
		if (!takenOver(caller.clientGone)) await releaseReservation(reservation, services.log);
		await removeImages(services.hostedFiles, storedIds, caller.apiKeyId, services.log);
		throw stoppedError(caller.clientGone, services.timeoutMs, provider);
	}
	// After the usage line: a reservation settled is one a cancel can no longer give back.
	await settleReservation(reservation, answer.usage.cost_usd, services.log);
	return answer;
}

/**
 * `n` images: one provider call each; the budget reserves the price of all of them or refuses the
 * generation. A resumed one was reserved before the restart: nothing is reserved again.
 */
async function reserve(services: RunnerServices, { request, price, caller, shaped }: Generation): Promise<BudgetReservation | null> {
	const priceUsd = roundUsd(price * (request.n ?? 1));
	const reservation = caller.resume ? caller.resume.reservation : await services.budgets.reserve(caller.apiKey, priceUsd);
	if (caller.reserved) {
		try {
			await caller.reserved({ generation: { ...request, aspect_ratio: shaped.settled.aspect_ratio }, reservedUsd: reservation ? priceUsd : 0 });
		} catch (error) {
			await releaseReservation(reservation, services.log);
			throw error;
		}
	}
	return reservation;
}

/**
 * Every image of the generation, or none: a failure releases the reservation and removes the
 * images stored so far. The time limit and the client going away stop every step.
 */
async function produceImages(
	services: RunnerServices,
	generation: Generation,
	reservation: BudgetReservation | null,
): Promise<{ images: AnsweredImage[]; servedBy: string; storedIds: readonly string[] }> {
	const { request, provider, caller, seen } = generation;
	const { timeoutMs } = services;
	const images: AnsweredImage[] = [];
	const storedIds: string[] = [];
	let servedBy = '';
	// Cleared when the generation ends, with its tie to the client (media/limited-signal.ts).
	const limit = limitedSignal(caller.clientGone, timeoutMs, () => new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'));
	const deadline = Date.now() + timeoutMs;
	const { signal } = limit;
	const stopped = () => stoppedError(signal, timeoutMs, provider);
	try {
		seen.provider = chainMembers(provider)[0]!;
		const { settled, loadInputImage } = generation.shaped;
		const signedInputs = services.provenance === UNMARKED ? undefined : new SignedInputs(loadInputImage);
		const count = request.n ?? 1;
		// A job of several images is not followed again after a restart (it ends with its
		// reservation released): the host's job named is only one of its images.
		const hostCaller = count === 1 ? caller : { ...caller, hostJobStarted: undefined };
		const production: ImageProduction = {
			generation: request,
			settled,
			provider,
			run: { loadInputImage: signedInputs?.loadInputImage ?? loadInputImage, imageWork: services.imageWork, signal, deadline, stopped, metrics: services.metrics, seen, caller: hostCaller },
			inputs: services.inputs,
			hostedFiles: services.hostedFiles,
			provenance: services.provenance,
			apiKeyId: caller.apiKeyId,
			...(services.provenanceRecords && caller.jobId !== undefined && { records: { store: services.provenanceRecords, jobId: caller.jobId } }),
			keepsInlineImages: caller.keepsInlineImages === true,
			storedIds,
			...(signedInputs && { signedInputs }),
			...(caller.timings && { timings: caller.timings }),
		};
		for (let index = 0; index < count; index++) {
			const { answered, servedBy: host } = await produceImage(production, index);
			servedBy ||= host;
			images.push(answered);
		}
		if (caller.stillWanted && !(await caller.stillWanted())) throw cancelled();
	} catch (error) {
		// A job another process took over keeps its charge: that process settles or releases it.
		if (!takenOver(signal)) await releaseReservation(reservation, services.log);
		await removeImages(services.hostedFiles, storedIds, caller.apiKeyId, services.log);
		// The limit or the client can stop any step after the host answered (a wait for the image
		// queue, a re-encode, the write): that is a time-out or a cancellation, never a 500.
		if (!(error instanceof ImageGenError) && signal.aborted) throw stopped();
		throw error;
	} finally {
		limit.done();
	}
	return { images, servedBy, storedIds };
}

/** The images exist: the answer, at their cost. */
function answerOf({ request, price }: Generation, images: AnsweredImage[]): GenerationAnswer {
	const costUsd = roundUsd(price * images.length);
	return {
		created: Math.floor(Date.now() / 1000),
		model: request.model,
		output_format: request.output_format,
		data: images,
		usage: { images: images.length, cost_usd: costUsd },
	};
}

/**
 * The usage line, durable before the answer, so a crash right after it loses nothing and
 * /v1/usage on any replica already counts it: a job writes it in its end's transaction
 * (`succeeded`), anyone else hands it to the ledger.
 */
async function record(services: RunnerServices, { request, caller }: Generation, answer: GenerationAnswer, servedBy: string): Promise<void> {
	const { usage } = answer;
	const entry: UsageEntry = { apiKeyId: caller.apiKeyId, model: request.model, images: usage.images, costUsd: usage.cost_usd, requestId: randomUUID(), provider: servedBy };
	const line = jobUsageLine(services.usageLedger, entry, services.log);
	await (caller.succeeded ? caller.succeeded(answer, line) : line.recordApart());
}

/** A generation that failed at image k hands out none: the k − 1 made before are not left behind. */
async function removeImages(hostedFiles: HostedFiles, ids: readonly string[], apiKeyId: string, log: GenerationServices['log']): Promise<void> {
	for (const id of ids) await hostedFiles.remove(id, apiKeyId).catch((error: unknown) => log.error({ err: error, id }, 'removing an image of a failed generation failed'));
}

/** A failed generation costs nothing; a release that fails only lets the reservation run out its lease. */
async function releaseReservation(reservation: BudgetReservation | null, log: GenerationServices['log']): Promise<void> {
	await reservation?.release().catch((error: unknown) => log.error({ err: error }, 'releasing a budget reservation failed'));
}

/** The images exist: the answer goes out even if the settlement cannot be written (reported for the operator). */
async function settleReservation(reservation: BudgetReservation | null, costUsd: number, log: GenerationServices['log']): Promise<void> {
	await reservation?.settle(costUsd).catch((error: unknown) => log.error({ err: error, costUsd }, 'charging a budget failed'));
}
