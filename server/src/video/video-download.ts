/**
 * A host's video brought to a work file on local disk, streamed and counted on the way: a URL of
 * the host's through the address-checked fetcher, a stream the provider opened, or the file the
 * provider wrote. Never whole in memory; past `maxBytes` the download is cut off and the job fails.
 */
import { createWriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ImageGenError } from '../../../core/errors';
import { formatBytes } from '../../../core/units';
import type { RemoteOpener } from '../net/safe-fetch';
import type { ProviderVideo } from './video-provider';

export interface VideoDownload {
	openRemote: RemoteOpener;
	maxBytes: number;
	/** The folder the file goes to (the job's work folder). */
	workDir: string;
	signal: AbortSignal;
	/** What is left of the job's time: the download may take all of it. */
	timeoutMs: number;
	provider: string;
}

function tooLarge(provider: string, maxBytes: number): ImageGenError {
	return new ImageGenError(502, `The ${provider} provider delivered a video larger than the ${formatBytes(maxBytes)} allowed (--max-video-mb)`, { code: 'upstream_video_too_large' });
}

/** Counts bytes and fails past the limit, before they reach the disk. */
class ByteLimit extends Transform {
	private seen = 0;
	constructor(
		private readonly maxBytes: number,
		private readonly provider: string,
	) {
		super();
	}
	override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
		this.seen += chunk.length;
		if (this.seen > this.maxBytes) callback(tooLarge(this.provider, this.maxBytes));
		else callback(null, chunk);
	}
}

/** Where the host's video is now: a file of this job's work folder. */
export async function downloadVideo(video: ProviderVideo, options: VideoDownload): Promise<string> {
	const target = join(options.workDir, 'host.mp4');
	if ('file' in video) {
		await rename(video.file, target);
		return target;
	}
	let source: Readable;
	if ('stream' in video) {
		source = video.stream;
	} else {
		try {
			source = await options.openRemote(new URL(video.url), { field: 'video', maxBytes: options.maxBytes, timeoutMs: options.timeoutMs, signal: options.signal });
		} catch (error) {
			// The URL is the host's, not the caller's: a refusal is the host's failure.
			if (error instanceof ImageGenError && error.status === 400) throw new ImageGenError(502, `The ${options.provider} provider's video could not be downloaded: ${error.message}`, { code: 'upstream_failed', cause: error });
			throw error;
		}
	}
	await pipeline(source, new ByteLimit(options.maxBytes, options.provider), createWriteStream(target), { signal: options.signal });
	return target;
}
