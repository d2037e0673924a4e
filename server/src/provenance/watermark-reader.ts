/**
 * Reading the watermark of an image being checked: a turn of the service's image queue
 * (media/image-work.ts: every decode of the service is bounded there, in number and in time), in
 * which the image is decoded within --max-image-pixels and its mark read in a worker thread
 * (watermark-detect-worker.ts), so that the reading's arithmetic over every pixel is not done on
 * the event loop. The threads start with the first image checked and end when idle. Run from the
 * TypeScript sources (the test suites' in-process apps) there is no compiled worker: the turn
 * reads the mark on the event loop.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { ImageGenError } from '../../../core/errors';
import type { ImageWork } from '../media/image-work';
import type { DetectAnswer, DetectTask } from './watermark-detect-worker';
import { detectWatermark, type WatermarkReading } from './watermark/detect';
import { decodePixels } from './watermark/encoded-image';

/** The compiled worker beside this file (absent when run from the TypeScript sources). */
export const WATERMARK_DETECT_WORKER_SCRIPT = join(__dirname, 'watermark-detect-worker.js');

/** As many as the image queue runs decodes at once: a turn never waits for a thread. */
const THREADS = 2;
/** A thread unused this long ends, and its memory with it. */
const IDLE_MS = 30_000;

export class WatermarkReader {
	private pool: Piscina<DetectTask, DetectAnswer> | undefined;

	constructor(
		private readonly imageWork: ImageWork,
		private readonly workerScript: string | undefined = existsSync(WATERMARK_DETECT_WORKER_SCRIPT) ? WATERMARK_DETECT_WORKER_SCRIPT : undefined,
	) {}

	/** The mark in the encoded image `bytes`; a RangeError for bytes that do not decode. */
	read(bytes: Buffer, signal?: AbortSignal): Promise<WatermarkReading> {
		return this.imageWork.run(
			async (task) => {
				const options = { limitInputPixels: task.limitInputPixels, timeoutSeconds: task.timeoutSeconds() };
				if (!this.workerScript) return detectWatermark(await decodePixels(bytes, options));
				const answer = await this.threads(this.workerScript).run({ bytes, options }, { signal: task.signal }).catch((error: unknown) => {
					if (task.signal.aborted) throw error;
					throw new ImageGenError(503, 'The watermark could not be read: its thread failed; retry', { code: 'provenance_unavailable', cause: error });
				});
				if ('undecodable' in answer) throw new RangeError(answer.undecodable);
				return answer.reading;
			},
			{ signal },
		);
	}

	/** Waits for the images being read, then ends the threads. */
	async close(): Promise<void> {
		await this.pool?.close();
	}

	private threads(filename: string): Piscina<DetectTask, DetectAnswer> {
		if (!this.pool) {
			this.pool = new Piscina<DetectTask, DetectAnswer>({ filename, minThreads: 0, maxThreads: THREADS, idleTimeout: IDLE_MS, maxQueue: Infinity, recordTiming: false });
			// A thread that fails with no image on it: the next image starts another.
			this.pool.on('error', () => undefined);
		}
		return this.pool;
	}
}
