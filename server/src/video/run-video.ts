/**
 * One video, from a checked request to its hosted MP4, in the steps of an image generation:
 * reserve (the key's models, and price × seconds reserved in its budget before the host is called),
 * make (the host's job, followed to its end; its MP4 streamed to a work file, checked to be an MP4,
 * signed, its first frame kept as a still), host (both stored under our retention), settle (the
 * reservation at the seconds made) and record (the usage line with its seconds). Every way in (HTTP,
 * MCP) runs videos through this, as jobs (jobs/job-runner.ts), so a video is durable like an image.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ImageGenError } from '../../../core/errors';
import { SEED_MAX } from '../../../core/models';
import { roundUsd } from '../../../core/units';
import type { VideoResult } from '../../../core/video-api';
import { VIDEO_MODELS, videoPricePerSecond } from '../../../core/video-models';
import type { VideoRequest } from '../../../core/video-schemas';
import type { PriceOverrides } from '../config';
import type { InputImageSource } from '../generation/input-images';
import { checkModelAllowed, type BudgetGate, type BudgetReservation } from '../generation/key-policy';
import { takenOver, type HostJobRef } from '../generation/provider';
import { cancelled, errorCode, stoppedError, type ResumedHostJob } from '../generation/run-provider';
import type { ApiKeyPolicy } from '../keys/authenticate';
import { limitedSignal } from '../media/limited-signal';
import { NO_METRICS, type ServiceMetrics } from '../metrics/service-metrics';
import type { RemoteOpener } from '../net/safe-fetch';
import { UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import type { HostedFiles } from '../storage/hosted-files';
import type { UsageEntry, UsageLedger } from '../usage/usage-ledger';
import { jobUsageLine, type JobUsageLine } from '../usage/job-usage-line';
import { downloadVideo } from './video-download';
import { hostVideo, type HostedVideo } from './host-video';
import { VIDEO_INPUT_FIELDS, settledAsAsked, settleVideo, videoInputLoader, type VideoInputLoader } from './video-inputs';
import type { SettledVideoRequest, VideoContext, VideoProvider } from './video-provider';
import type { VideoProviderTable } from './video-providers';
import { WORK_FOLDER_PREFIX } from './work-folders';

export interface VideoServices {
	providers: VideoProviderTable;
	prices: PriceOverrides;
	timeoutMs: number;
	maxVideoBytes: number;
	inputs: InputImageSource;
	openRemote: RemoteOpener;
	/** Where each job's work folder goes (under the data dir: on the disk the files go to). */
	workRoot: string;
	hostedFiles: HostedFiles;
	usageLedger: UsageLedger;
	budgets: BudgetGate;
	log: { error(details: object, message: string): void };
	metrics?: ServiceMetrics;
	provenance?: ProvenanceMarker;
}

/** Who asks for the video and what the job around it is told (as GenerationCaller for images). */
export interface VideoCaller {
	apiKeyId: string;
	apiKey: ApiKeyPolicy;
	clientGone: AbortSignal;
	/** The job's id: the manifest names it. */
	jobId?: string;
	reserved?(reservation: { generation: VideoRequest; reservedUsd: number }): Promise<void>;
	hostJobStarted?(job: HostJobRef): Promise<void>;
	stillWanted?(): Promise<boolean>;
	/** As for images (run-generation.ts `succeeded`): the usage line goes with the job's end. */
	succeeded?(answer: VideoResult, usageLine: JobUsageLine): Promise<void>;
	resume?: ResumedHostJob;
}

export type VideoRunner = (request: VideoRequest, caller: VideoCaller) => Promise<VideoResult>;

const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);

type RunnerServices = VideoServices & Required<Pick<VideoServices, 'metrics' | 'provenance'>>;

/** A video under way: its settled request, its host, its price per second and its inputs. */
interface VideoWork {
	request: SettledVideoRequest;
	provider: VideoProvider;
	perSecondUsd: number;
	caller: VideoCaller;
	load: VideoInputLoader;
	signal: AbortSignal;
	deadline: number;
	workDir: string;
}

export function createVideoRunner(services: VideoServices): VideoRunner {
	const runner: RunnerServices = { ...services, metrics: services.metrics ?? NO_METRICS, provenance: services.provenance ?? UNMARKED };
	return async (request, caller) => {
		const started = performance.now();
		const provider = runner.providers[request.model];
		const observe = (outcome: string, costUsd: number) =>
			runner.metrics.generation({ model: request.model, provider: provider.name, outcome, seconds: (performance.now() - started) / 1000, costUsd });
		try {
			const result = await makeVideo(runner, request, caller);
			observe('success', result.usage.cost_usd);
			return result;
		} catch (error) {
			observe(errorCode(error), 0);
			if (errorCode(error) !== 'cancelled' && error instanceof ImageGenError && error.status >= 500) runner.metrics.providerError(provider.name, errorCode(error));
			throw error;
		}
	};
}

async function makeVideo(services: RunnerServices, request: VideoRequest, caller: VideoCaller): Promise<VideoResult> {
	checkModelAllowed(caller.apiKey, request.model);
	const withSeed = { ...request, seed: request.seed ?? randomInt(0, SEED_MAX + 1) };
	const provider = services.providers[request.model];
	const spec = VIDEO_MODELS[request.model];
	const perSecondUsd = videoPricePerSecond(spec, request.resolution, request.draft, services.prices[request.model]);
	// With an audio track the host follows its length: up to the longest video is reserved, the length made is charged.
	const reservedSeconds = request.audio === undefined ? request.seconds : spec.maxSeconds;
	// The inputs are fetched and checked first: a first frame that is not an image is the request's
	// 400, before a job exists or anything is reserved.
	// A resumed job's host has its inputs already: they are not fetched again.
	const load = videoInputLoader(withSeed, services.inputs, caller.clientGone);
	const settled = caller.resume ? settledAsAsked(withSeed) : await settleVideo(withSeed, load);
	if (!caller.resume) for (const field of VIDEO_INPUT_FIELDS) if (withSeed[field] !== undefined) await load(field);
	const reservation = await reserve(services, withSeed, caller, roundUsd(perSecondUsd * reservedSeconds));
	const limit = limitedSignal(caller.clientGone, services.timeoutMs, () => new DOMException(`no video within ${services.timeoutMs} ms`, 'TimeoutError'));
	await mkdir(services.workRoot, { recursive: true });
	const workDir = await mkdtemp(join(services.workRoot, WORK_FOLDER_PREFIX));
	let hosted: HostedVideo | undefined;
	let endUnwritten = false;
	try {
		const work: VideoWork = { request: settled, provider, perSecondUsd, caller, load, signal: limit.signal, deadline: Date.now() + services.timeoutMs, workDir };
		hosted = await hostVideo(services, await runHost(services, work), work);
		if (caller.stillWanted && !(await caller.stillWanted())) throw cancelled();
		const result = resultOf(hosted, settled, perSecondUsd);
		await record(services, withSeed, caller, result, provider.name).catch((error: unknown) => {
			// A job whose end could not be written (its store failing) keeps its charge and video for its recovery, which releases the charge once.
			endUnwritten = !caller.clientGone.aborted || error !== caller.clientGone.reason;
			throw error;
		});
		// After the usage line: a reservation settled is one a cancel can no longer give back.
		await reservation?.settle(result.usage.cost_usd).catch((error: unknown) => services.log.error({ err: error }, 'charging a budget failed'));
		return result;
	} catch (error) {
		// A job another process took over keeps its charge: that process settles or releases it.
		if (endUnwritten) throw error;
		if (!takenOver(limit.signal)) await reservation?.release().catch((failure: unknown) => services.log.error({ err: failure }, 'releasing a budget reservation failed'));
		if (hosted) await hosted.remove();
		if (!(error instanceof ImageGenError) && limit.signal.aborted) throw stoppedError(limit.signal, services.timeoutMs, provider);
		throw error;
	} finally {
		limit.done();
		await rm(workDir, { recursive: true, force: true });
	}
}

/** The price of the seconds asked for, reserved before the host is called (a resumed job's was reserved before). */
async function reserve(services: RunnerServices, request: VideoRequest, caller: VideoCaller, priceUsd: number): Promise<BudgetReservation | null> {
	const reservation = caller.resume ? caller.resume.reservation : await services.budgets.reserve(caller.apiKey, priceUsd);
	try {
		await caller.reserved?.({ generation: request, reservedUsd: reservation ? priceUsd : 0 });
	} catch (error) {
		await reservation?.release().catch(() => undefined);
		throw error;
	}
	return reservation;
}

/** The host's job (created, or followed after a restart), its MP4 brought to the work folder. */
async function runHost(services: RunnerServices, work: VideoWork): Promise<string> {
	const { provider, caller, signal, deadline, workDir } = work;
	const context: VideoContext = { signal, deadline, workDir, loadInput: work.load, ...(caller.hostJobStarted ? { hostJobStarted: caller.hostJobStarted } : {}) };
	try {
		const { resume } = caller;
		if (resume && !provider.resume) throw new Error(`the ${provider.name} provider cannot follow a job it started before`);
		const video = resume ? await provider.resume!(resume.job, context) : await provider.generate(work.request, context);
		signal.throwIfAborted();
		return await downloadVideo(video, { openRemote: services.openRemote, maxBytes: services.maxVideoBytes, workDir, signal, timeoutMs: Math.max(1, deadline - Date.now()), provider: provider.name });
	} catch (error) {
		if (error instanceof ImageGenError) throw error;
		if (signal.aborted) throw stoppedError(signal, services.timeoutMs, provider);
		// The error's own text may name internal hosts and addresses; it goes to the log as the cause.
		throw new ImageGenError(502, `The ${provider.name} provider failed`, { code: 'upstream_failed', cause: error });
	}
}

/** What the job keeps: the hosted files, the length billed and its cost. */
function resultOf(hosted: HostedVideo, request: SettledVideoRequest, perSecondUsd: number): VideoResult {
	const spec = VIDEO_MODELS[request.model];
	// Billed by the second, as the host bills: the length asked for, or with audio the length made.
	const seconds = request.audio === undefined ? request.seconds : Math.min(spec.maxSeconds, Math.max(spec.minSeconds, Math.ceil(hosted.durationSeconds - 0.05)));
	return {
		object: 'video.result',
		video: { id: hosted.video.id, url: hosted.videoUrl, bytes: hosted.video.size, expires_at: unixSeconds(hosted.video.expiresAt), ...(hosted.video.provenance ? { provenance: hosted.video.provenance } : {}) },
		thumbnail: hosted.still ? { id: hosted.still.id, url: hosted.stillUrl!, bytes: hosted.still.size, expires_at: unixSeconds(hosted.still.expiresAt) } : null,
		seconds,
		size: `${hosted.width}x${hosted.height}`,
		usage: { seconds, cost_usd: roundUsd(perSecondUsd * seconds) },
	};
}

/** The usage line, in the transaction of the job's end when there is a job (as for images: run-generation.ts `record`). */
async function record(services: RunnerServices, request: VideoRequest, caller: VideoCaller, result: VideoResult, provider: string): Promise<void> {
	const entry: UsageEntry = { apiKeyId: caller.apiKeyId, model: request.model, images: 0, seconds: result.seconds, costUsd: result.usage.cost_usd, requestId: randomUUID(), provider };
	const line = jobUsageLine(services.usageLedger, entry, services.log);
	await (caller.succeeded ? caller.succeeded(result, line) : line.recordApart());
}
