/**
 * A host's MP4, on local disk, made ours: checked to be a whole MP4 (a host's error page or a cut
 * download is the host's failure, never a hosted file), signed (our C2PA manifest, the first frame
 * an ingredient when it carries its own), its first frame kept as a still, and both stored under
 * the retention, streamed from the disk (never whole in memory).
 */
import { join } from 'node:path';
import { ImageGenError } from '../../../core/errors';
import { MEDIA_DETAILS, sniffMedia, type SniffedMedia } from '../../../core/media';
import { inspectMp4, Mp4Error } from '../media/mp4';
import { inSpan } from '../telemetry/spans';
import type { FileRecord, HostedFiles } from '../storage/hosted-files';
import { UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import type { SettledVideoRequest, VideoProvider } from './video-provider';
import { writeVideoStill } from './video-still';

export interface HostedVideo {
	video: FileRecord;
	videoUrl: string;
	still: FileRecord | null;
	stillUrl: string | null;
	width: number;
	height: number;
	durationSeconds: number;
	/** Removes both files (a job that ends without them: canceled meanwhile, its end not written). */
	remove(): Promise<void>;
}

interface HostingServices {
	hostedFiles: HostedFiles;
	provenance: ProvenanceMarker;
	log: { error(details: object, message: string): void };
}

interface HostingWork {
	request: SettledVideoRequest;
	provider: VideoProvider;
	caller: { apiKeyId: string; jobId?: string };
	load(field: 'image'): Promise<Buffer>;
	signal: AbortSignal;
	workDir: string;
}

async function checkedMp4(path: string, provider: string) {
	try {
		return await inspectMp4(path);
	} catch (error) {
		if (error instanceof Mp4Error) throw new ImageGenError(502, `The ${provider} provider delivered no playable MP4: ${error.reason}`, { code: 'upstream_invalid_output' });
		throw error;
	}
}

/** Signs the MP4 unless the service marks nothing; answers the file to host and what it carries. */
async function signed(services: HostingServices, work: HostingWork, input: string) {
	// Only for the manifest's ingredient: a first frame that can no longer be fetched (a job resumed
	// after a restart) leaves the video signed without it, never unhosted.
	const firstFrame = work.request.image === undefined ? undefined : await work.load('image').catch(() => undefined);
	const frameType = firstFrame && sniffMedia(firstFrame);
	const output = join(work.workDir, 'signed.mp4');
	const job = {
		input,
		output,
		model: work.request.model,
		generationId: work.caller.jobId ?? 'video',
		...(firstFrame && frameType ? { firstFrame: { bytes: firstFrame, mimeType: frameType.mimeType } } : {}),
	};
	const { provenance } = services;
	// With --provenance off nothing is marked: no span, as for images.
	const marked =
		provenance === UNMARKED ? await provenance.markVideo(job, work.signal) : await inSpan('mark video', { attributes: { 'gen_ai.request.model': job.model } }, () => provenance.markVideo(job, work.signal));
	if (!marked.marked && marked.reason) services.log.error({ reason: marked.reason }, 'a video is hosted without a C2PA manifest');
	return marked.marked ? { path: output, provenance: marked.provenance } : { path: input, provenance: undefined };
}

/**
 * Stores a file of the work folder, checked already (an MP4, a WebP still), copied by the storage
 * engine where it can; a video's marks are what we signed (the file is not read back for them).
 */
async function store(hostedFiles: HostedFiles, path: string, ownerKeyId: string, media: SniffedMedia, marks: { provenance?: FileRecord['provenance'] }): Promise<FileRecord> {
	const staged = await hostedFiles.stageLocalFile(path, media, ownerKeyId);
	return await hostedFiles.publish({ ...staged, ...(marks.provenance ? { provenance: marks.provenance } : {}), mayCarryC2pa: false });
}

export async function hostVideo(services: HostingServices, downloaded: string, work: HostingWork): Promise<HostedVideo> {
	const { hostedFiles } = services;
	const info = await checkedMp4(downloaded, work.provider.name);
	const { path, provenance } = await signed(services, work, downloaded);
	const stillPath = join(work.workDir, 'still.webp');
	const still = await writeVideoStill(path, stillPath, work.signal).then(
		() => true,
		(error: unknown) => {
			services.log.error({ err: error }, "a video's still could not be made; it is hosted without one");
			return false;
		},
	);
	const owner = work.caller.apiKeyId;
	const video = await store(hostedFiles, path, owner, MEDIA_DETAILS.mp4, { provenance });
	let stillFile: FileRecord | null = null;
	try {
		stillFile = still ? await store(hostedFiles, stillPath, owner, MEDIA_DETAILS.webp, {}) : null;
	} catch (error) {
		await hostedFiles.remove(video.id, owner).catch(() => undefined);
		throw error;
	}
	return {
		video,
		videoUrl: hostedFiles.publicUrl(video),
		still: stillFile,
		stillUrl: stillFile ? hostedFiles.publicUrl(stillFile) : null,
		width: info.width,
		height: info.height,
		durationSeconds: info.durationSeconds,
		async remove() {
			for (const file of [video, stillFile]) if (file) await hostedFiles.remove(file.id, owner).catch((error: unknown) => services.log.error({ err: error, id: file.id }, "removing a video's file failed"));
		},
	};
}
