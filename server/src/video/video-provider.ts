/**
 * What a video provider is: something that turns a checked video request into an MP4, on a host
 * that (like every video host) takes seconds to minutes and names its job, so a job cut off by a
 * restart is followed again by that name, never created twice.
 *
 * A provider answers where the MP4 is, never its bytes in memory: a URL of the host's (the runner
 * downloads it through the address-checked fetcher), a stream it opened itself (a delivery that
 * needs the host's credentials), or a file it made on local disk (the sandbox). The runner streams
 * each of them to a work file, checks it is an MP4, signs it and hosts it (video/run-video.ts).
 */
import type { Readable } from 'node:stream';
import type { VideoRequest } from '../../../core/video-schemas';
import type { HostJobRef } from '../generation/provider';

/** A checked request as a provider gets it: its seed drawn and its frame size settled. */
export interface SettledVideoRequest extends VideoRequest {
	seed: number;
	/** The frame the catalog gives `aspect_ratio` at `resolution` (a first frame's ratio when there is one). */
	width: number;
	height: number;
}

export type ProviderVideo =
	/** A URL of the host's, downloaded keyless through the address-checked fetcher. */
	| { url: string }
	/** A download the provider opened itself (with the host's credentials); the runner consumes it. */
	| { stream: Readable }
	/** An MP4 the provider wrote under `context.workDir`; the runner takes it over. */
	| { file: string };

export type VideoInputField = 'image' | 'last_frame_image' | 'audio';

export interface VideoContext {
	/** Aborted when the job is canceled or its time limit passes; providers must stop work. */
	signal: AbortSignal;
	/** When the time limit passes (Date.now() milliseconds). */
	deadline?: number;
	/**
	 * Bytes of an input (`image`, `last_frame_image`, `audio`): data URIs and base64 decoded, URLs
	 * fetched through the address-checked fetcher, bounded in bytes. Throws a 400 naming the field.
	 */
	loadInput(field: VideoInputField): Promise<Buffer>;
	/** A folder on local disk for this job's work files; the runner removes it when the job ends. */
	workDir: string;
	/**
	 * Called as soon as the host accepted the job and named it, before the provider polls; the
	 * runner makes it durable before it returns. A resumed job is not told again.
	 */
	hostJobStarted?(job: HostJobRef): Promise<void>;
	/**
	 * Told the host's id for its job as soon as the host answers with one, also when the job ended
	 * on its create and is never followed (its trace names it: generation/traced-provider.ts).
	 */
	hostJobNamed?(job: HostJobRef): void;
	/** How far the host says it is, 0–100, when it says. */
	progress?(percent: number): void;
}

export interface VideoProvider {
	/** Name used in configuration (`--providers p-video=pruna`) and in logs. */
	readonly name: string;
	generate(request: SettledVideoRequest, context: VideoContext): Promise<ProviderVideo>;
	/** The host names its jobs, so a job cut off by a restart can be followed again. */
	readonly hasJobIds?: boolean;
	/** Follows a job this provider's host accepted before (after a restart): polls it to its end; never creates. */
	resume?(job: HostJobRef, context: VideoContext): Promise<ProviderVideo>;
	/** Cancels the host's job, best effort. */
	cancel?(job: HostJobRef): Promise<void>;
}
