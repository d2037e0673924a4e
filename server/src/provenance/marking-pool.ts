/**
 * Marks images in a small pool of worker threads (piscina running marking-worker.ts), so the CPU
 * the C2PA engine spends on a large image (it grows with the file: c2pa-rs hashes all of it in
 * WebAssembly) is not taken from the event loop that serves every other request. Worker threads are
 * threads of their own, not libuv's: the pool never holds a thread that file I/O or sharp needs.
 * The workers start with the first image, so a service that never marks a large one never carries
 * them (each holds its own C2PA engine, compiled and resident).
 *
 * The queue is bounded (`canTake`; past it, 503 `provenance_busy`). A worker that dies fails only
 * the image it was marking (503 `provenance_unavailable`) and piscina starts another; when no
 * worker can start at all, the pool gives up and refuses images (`canTake` is false). `close()`
 * lets every accepted image finish: that wait is counted here, because piscina's own `close()`
 * may stop a busy worker once any other is idle.
 *
 * Videos go to threads of their own, one video at a time: c2pa-rs grows its WebAssembly memory to
 * several times the video it signs and never gives it back, so the thread that signed a video ends
 * with it, and the memory goes with the thread. Aborting the caller's signal stops that thread.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { ImageGenError } from '../../../core/errors';
import { transferableBytes } from '../media/release-bytes';
import type { ConvertedUploadFacts, GeneratedImageFacts, MarkedImage, MarkedVideo, ProvenanceMarker, VideoMarkingJob } from './provenance-marker';
import type { MarkingAnswer, MarkingTask, MarkingWorkerData, VideoMarkingAnswer } from './marking-worker';
import { tooLargeToSign } from './sign-video';

interface MarkingPoolOptions {
	workerData: MarkingWorkerData;
	/** Worker threads; one is enough to take marking off the event loop. */
	threads?: number;
	/** Images waiting for a worker, beyond those being marked. */
	maxQueued?: number;
	/** The compiled worker; beside this file by default. */
	workerScript?: string;
}

/** The compiled worker beside this file (absent when run from the TypeScript sources). */
export const MARKING_WORKER_SCRIPT = join(__dirname, 'marking-worker.js');

export class MarkingPool implements ProvenanceMarker {
	private pool: Piscina<MarkingTask, MarkingAnswer> | undefined;
	private videoThreads: Piscina<MarkingTask, VideoMarkingAnswer> | undefined;
	private readonly maxQueued: number;
	/** Every image accepted and not yet answered: what `close()` waits for. */
	private readonly accepted = new Set<Promise<unknown>>();
	private closing = false;
	/** No worker could start: images go elsewhere from now on. */
	private brokenBy: Error | undefined;

	constructor(private readonly options: MarkingPoolOptions) {
		this.maxQueued = options.maxQueued ?? 64;
	}

	/** Whether an image submitted now would be accepted. */
	canTake(): boolean {
		return !this.closing && !this.brokenBy && (this.pool?.queueSize ?? 0) < this.maxQueued;
	}

	/** Pixels are handed to the worker (emptied here at once), not copied: they are the marking's own. */
	markGenerated(image: GeneratedImageFacts): Promise<MarkedImage> {
		if (!('pixels' in image)) return this.submit({ kind: 'generated', facts: image });
		const memory = transferableBytes(image.pixels.data);
		return this.submit({ kind: 'generated', facts: { ...image, pixels: { ...image.pixels, data: new Uint8Array(memory) } } }, [memory]);
	}

	markConverted(upload: ConvertedUploadFacts): Promise<MarkedImage> {
		return this.submit({ kind: 'converted', facts: upload });
	}

	/** In a thread that ends with the video; the signed MP4 is written by that thread. */
	async markVideo(job: VideoMarkingJob, signal?: AbortSignal): Promise<MarkedVideo> {
		// Answered here: no thread is started to say so.
		const tooLarge = await tooLargeToSign(job.input);
		if (tooLarge) return tooLarge;
		if (this.closing) throw unavailable('the service is shutting down', undefined, 'video');
		const threads = (this.videoThreads ??= this.startVideoThreads());
		if (threads.queueSize >= this.maxQueued) throw new ImageGenError(503, 'Too many videos are waiting to be marked; retry shortly', { code: 'provenance_busy' });
		const marked = threads.run({ kind: 'video', facts: job }, signal ? { signal } : {}).then(
			(answer) => {
				if ('failed' in answer) throw new Error(`marking the video failed: ${answer.failed}`);
				return answer.video;
			},
			// Stopped mid-way (aborted, or the thread died): what it may have half written goes too.
			async (error: unknown) => {
				await rm(job.output, { force: true });
				if (signal?.aborted) throw signal.reason;
				throw unavailable('the worker marking it stopped', error instanceof Error ? error : new Error(String(error)), 'video');
			},
		);
		return this.track(marked);
	}

	/** Waits for every accepted image and video, then stops the workers. */
	async close(): Promise<void> {
		this.closing = true;
		await Promise.allSettled(this.accepted);
		await Promise.all([this.pool?.destroy(), this.videoThreads?.destroy()]);
	}

	private submit(task: MarkingTask, transferList: ArrayBuffer[] = []): Promise<MarkedImage> {
		if (this.closing) return Promise.reject(unavailable('the service is shutting down'));
		if (this.brokenBy) return Promise.reject(unavailable('no marking worker could be started', this.brokenBy));
		const pool = (this.pool ??= this.start());
		if (pool.queueSize >= this.maxQueued) {
			return Promise.reject(new ImageGenError(503, 'Too many images are waiting to be marked; retry shortly', { code: 'provenance_busy' }));
		}
		const marked = pool.run(task, { transferList }).then(
			(answer) => {
				if ('failed' in answer) throw new Error(`marking the image failed: ${answer.failed}`);
				// The worker handed its memory over: wrap it, do not copy it.
				const { bytes } = answer.marked;
				return { ...answer.marked, bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
			},
			// The worker ended (crashed, or the pool was stopped) with this image on it.
			(error: unknown) => {
				throw unavailable('the worker marking it stopped', error instanceof Error ? error : new Error(String(error)));
			},
		);
		return this.track(marked);
	}

	private track<T>(marked: Promise<T>): Promise<T> {
		this.accepted.add(marked);
		const settled = () => this.accepted.delete(marked);
		marked.then(settled, settled);
		return marked;
	}

	/** No thread until a video comes, and none once it is signed (`minThreads` 0, no idle time). */
	private startVideoThreads(): Piscina<MarkingTask, VideoMarkingAnswer> {
		const threads = new Piscina<MarkingTask, VideoMarkingAnswer>({
			filename: this.options.workerScript ?? MARKING_WORKER_SCRIPT,
			workerData: this.options.workerData,
			minThreads: 0,
			maxThreads: 1,
			idleTimeout: 0,
			maxQueue: Infinity,
			recordTiming: false,
		});
		// A thread that fails with no video on it: the next video starts another, and a video whose
		// thread died is failed by its own run.
		threads.on('error', () => undefined);
		return threads;
	}

	private start(): Piscina<MarkingTask, MarkingAnswer> {
		const threads = this.options.threads ?? 1;
		const pool = new Piscina<MarkingTask, MarkingAnswer>({
			filename: this.options.workerScript ?? MARKING_WORKER_SCRIPT,
			workerData: this.options.workerData,
			minThreads: threads,
			maxThreads: threads,
			// Bounded here (`canTake`), not by piscina's own limit.
			maxQueue: Infinity,
			recordTiming: false,
		});
		// A worker that fails with no image on it, or that cannot even start. piscina replaces the
		// first kind; after the second it starts no more, and images left in its queue would wait
		// for ever: they fail now (503) and later images are marked elsewhere.
		pool.on('error', (error: Error) => {
			if (pool.threads.length > 0 || this.brokenBy) return;
			this.brokenBy = error;
			void pool.destroy();
		});
		return pool;
	}
}

function unavailable(why: string, cause?: Error, what: 'image' | 'video' = 'image'): ImageGenError {
	return new ImageGenError(503, `The ${what} could not be marked with its provenance: ${why}; retry`, { code: 'provenance_unavailable', ...(cause ? { cause } : {}) });
}
