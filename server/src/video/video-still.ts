/**
 * The still of a video's first frame (`GET /v1/videos/{id}/content?variant=thumbnail`, as OpenAI's
 * API offers it): ffmpeg decodes only that frame and encodes it as WebP itself (the packaged build
 * has libwebp), so no frame passes through this process's memory.
 */
import { runFfmpeg } from '../media/ffmpeg';
import sharp from '../media/sharp';

/** A thumbnail is looked at small; lossy WebP at this quality keeps it a fraction of a PNG. */
const STILL_QUALITY = 80;
const STILL_TIMEOUT_MS = 30_000;

/** Writes the first frame of the MP4 at `mp4Path` to `outPath` as WebP; answers its size. */
export async function writeVideoStill(mp4Path: string, outPath: string, signal?: AbortSignal): Promise<{ width: number; height: number }> {
	const args = ['-v', 'error', '-i', mp4Path, '-map', '0:v:0', '-frames:v', '1', '-an', '-c:v', 'libwebp', '-quality', String(STILL_QUALITY), '-f', 'webp', '-y', outPath];
	await runFfmpeg(args, { signal, what: 'take the first frame of the video', timeoutMs: STILL_TIMEOUT_MS });
	const { width, height, format } = await sharp(outPath).metadata();
	if (format !== 'webp' || width === undefined || height === undefined) throw new Error(`the video's still is not a WebP image (${format ?? 'unknown format'})`);
	return { width, height };
}
