/**
 * Signs a generated MP4 where it lies on disk into the file the service then hosts. c2pa-rs hashes
 * the whole video and answers the whole signed file as one array, several times the video's size
 * while it works: a video above MAX_SIGNED_VIDEO_BYTES is not signed at all and is hosted as it
 * came, which the answer says (`marked: false` and why), so one long video cannot take the
 * service's memory. Whoever calls this off the event loop also gives that memory back afterwards
 * (marking-pool.ts ends the thread that signed a video).
 */
import { stat, rm } from 'node:fs/promises';
import { TRAINED_ALGORITHMIC_MEDIA } from '../../../core/api';
import { signFileWithC2pa } from './c2pa-engine';
import type { CoseSigner } from './cose-signer';
import type { MarkedVideo, VideoMarkingJob } from './provenance-marker';
import { VIDEO_MIME_TYPE, videoManifest } from './video-manifest';

/**
 * The largest MP4 that is signed: what signing takes then (several times this, for the while it
 * lasts) is memory a service can spare. The catalog's videos are seconds long and come well under it.
 */
export const MAX_SIGNED_VIDEO_BYTES = 32 * 1024 * 1024;

export interface VideoSigningOptions {
	signer: CoseSigner;
	/** `imagegen-server <version>`. */
	creatorTool: string;
	/** MAX_SIGNED_VIDEO_BYTES unless told. */
	maxBytes?: number;
}

export async function signVideo(job: VideoMarkingJob, options: VideoSigningOptions, signal?: AbortSignal): Promise<MarkedVideo> {
	signal?.throwIfAborted();
	const tooLarge = await tooLargeToSign(job.input, options.maxBytes);
	if (tooLarge) return tooLarge;
	const { manifest, ingredients } = videoManifest({ ...job, creatorTool: options.creatorTool });
	try {
		await signFileWithC2pa({ manifest, ingredients, mimeType: VIDEO_MIME_TYPE, input: job.input, output: job.output }, options.signer);
		signal?.throwIfAborted();
	} catch (error) {
		// Half a file, or a signed one nobody will host, is not left behind.
		await rm(job.output, { force: true });
		throw error;
	}
	return { marked: true, provenance: { c2pa: 'signed', digital_source_type: TRAINED_ALGORITHMIC_MEDIA } };
}

/** The answer for a video too large to sign, or undefined when it is signed. */
export async function tooLargeToSign(input: string, maxBytes = MAX_SIGNED_VIDEO_BYTES): Promise<MarkedVideo | undefined> {
	const { size } = await stat(input);
	if (size <= maxBytes) return undefined;
	return { marked: false, reason: `the video (${size} bytes) is larger than the ${maxBytes} bytes that are signed with a C2PA manifest` };
}
