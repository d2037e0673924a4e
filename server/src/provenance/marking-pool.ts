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
 */
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { ImageGenError } from '../../../core/errors';
import type { ConvertedUploadFacts, GeneratedImageFacts, MarkedImage, ProvenanceMarker } from './provenance-marker';
import type { MarkingAnswer, MarkingTask, MarkingWorkerData } from './marking-worker';

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

	markGenerated(image: GeneratedImageFacts): Promise<MarkedImage> {
		return this.submit({ kind: 'generated', facts: image });
	}

	markConverted(upload: ConvertedUploadFacts): Promise<MarkedImage> {
		return this.submit({ kind: 'converted', facts: upload });
	}

	/** Waits for every accepted image, then stops the workers. */
	async close(): Promise<void> {
		this.closing = true;
		await Promise.allSettled(this.accepted);
		await this.pool?.destroy();
	}

	private submit(task: MarkingTask): Promise<MarkedImage> {
		if (this.closing) return Promise.reject(unavailable('the service is shutting down'));
		if (this.brokenBy) return Promise.reject(unavailable('no marking worker could be started', this.brokenBy));
		const pool = (this.pool ??= this.start());
		if (pool.queueSize >= this.maxQueued) {
			return Promise.reject(new ImageGenError(503, 'Too many images are waiting to be marked; retry shortly', { code: 'provenance_busy' }));
		}
		const marked = pool.run(task).then(
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
		this.accepted.add(marked);
		const settled = () => this.accepted.delete(marked);
		marked.then(settled, settled);
		return marked;
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

function unavailable(why: string, cause?: Error): ImageGenError {
	return new ImageGenError(503, `The image could not be marked with its provenance: ${why}; retry`, { code: 'provenance_unavailable', ...(cause ? { cause } : {}) });
}
