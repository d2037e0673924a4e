/**
 * What a generation provider is: something that turns a validated request into image bytes
 * (or a URL of its own, which we fetch and re-host so every URL we answer with is ours).
 */
import type { AspectRatio, ModelLimits } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import type { ImageBytes } from '../media/image-bytes';
import type { ImageWork } from '../media/image-work';

/**
 * A validated request as a provider gets it, its aspect ratio settled: `aspect_ratio` is the ratio
 * the answer is brought to. `matchInputImage` says the caller asked for `match_input_image`, and
 * `aspect_ratio` is then the catalog ratio nearest to the first input image's; hosts that take
 * `match_input_image` themselves are sent that instead (generation/input-shape.ts).
 */
export interface SettledRequest extends Omit<GenerationRequest, 'aspect_ratio'> {
	aspect_ratio: AspectRatio;
	matchInputImage?: boolean;
}

/**
 * An image a host answered: its bytes, owned when they were made for this answer alone (decoded
 * from the host's base64, downloaded, drawn), so the runner gives their memory back as soon as it
 * is done with them, and lent when the provider keeps them (media/image-bytes.ts); or a URL of the
 * host's, which the runner downloads (bytes it owns).
 */
export type ProviderImage = ImageBytes | { url: string };

/** A job a host accepted and named: the member of a chain that took it, and the host's own id. */
export interface HostJobRef { provider: string; id: string }

export interface GenerationContext {
	/** Aborted when our client goes away or the time limit passes; providers must stop work. */
	signal: AbortSignal;
	/** When the time limit passes (Date.now() milliseconds): a host's 429 is waited out only before it. */
	deadline?: number;
	/**
	 * Bytes of one input image (`images[i]` of p-image-edit): decodes data URIs and base64, fetches
	 * URLs through the SSRF-checked fetcher. Throws a 400 naming `images[i]` on failure.
	 */
	loadInputImage(index: number): Promise<Buffer>;
	/** The service's bounded image queue (media/image-work.ts), for providers that draw with sharp. */
	imageWork: ImageWork;
	/**
	 * Told of each host a fallback chain tried (provider-chain.ts): which one served, which failed
	 * and why. A single provider does not call it; the caller knows that provider already.
	 */
	attempted?(attempt: ProviderAttempt): void;
	/**
	 * Called as soon as a host accepted the job and named it (Replicate's prediction id, Pruna's),
	 * before the provider polls. The runner makes it durable before it returns; the provider awaits it.
	 * A resumed job is not told again.
	 */
	hostJobStarted?(job: HostJobRef): Promise<void>;
	/**
	 * Told the host's id for its job as soon as the host answers with one, whether or not the job
	 * is followed again (its trace names it: generation/traced-provider.ts).
	 */
	hostJobNamed?(job: HostJobRef): void;
	/**
	 * Told by a provider whose host drew the image without the request's seed (a ComfyUI workflow
	 * without `{{seed}}`): the answer then names no seed rather than one that made nothing of it.
	 */
	seedUnused?(): void;
}

export interface ProviderAttempt {
	provider: string;
	/** Absent when this host served. */
	error?: unknown;
}

export interface GenerationProvider {
	/** Name used in configuration (`--providers p-image=replicate`) and in logs. */
	readonly name: string;
	/** What the host takes for this model where it is less than the catalog allows (documented limits). */
	readonly limits?: ModelLimits;
	generate(request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]>;
	/** The host names its jobs, so a job cut off by a restart can be followed again (Replicate, Pruna). */
	readonly hasJobIds?: boolean;
	/** Follows a job this provider's host accepted before (after a restart): polls it to its end; never creates. */
	resume?(job: HostJobRef, context: GenerationContext): Promise<ProviderImage[]>;
	/** Cancels the host's job, best effort (a cancel that reaches a replica that is not running it). */
	cancel?(job: HostJobRef): Promise<void>;
}

/**
 * Why a job's run is stopped when another process took the job over (this one lost its lease
 * while alive: paused, or cut off from the database): the host's job goes on for that process,
 * which holds the charge. Nothing of this run may cancel the host's job, give the charge back or
 * record usage.
 */
export class JobTakenOver extends Error {
	constructor() {
		super('the job was taken over by another process');
		this.name = 'JobTakenOver';
	}
}

/** The run was stopped because another process follows its job now. */
export function takenOver(signal: AbortSignal): boolean {
	return signal.aborted && signal.reason instanceof JobTakenOver;
}

/** The run was stopped and nobody follows its host's job any more: the host is asked to cancel it. */
export function hostJobUnwanted(signal: AbortSignal): boolean {
	return signal.aborted && !takenOver(signal);
}
