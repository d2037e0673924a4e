/**
 * Marks images in a small pool of worker threads (marking-worker.ts), so the CPU the C2PA engine
 * spends on a large image (≈ 7 ms per MB: c2pa-rs hashes the whole file in WebAssembly) is not
 * taken from the event loop that serves every other request. Worker threads are threads of their
 * own, not libuv's: the pool never holds a thread that file I/O or sharp needs. The workers start
 * with the first image, so a service that never marks a large one never carries them (each holds
 * its own C2PA engine, ≈ 15 MB).
 *
 * The queue is bounded (`canTake`; past it, 503 `provenance_busy`). A worker that dies fails only
 * the image it was marking (503 `provenance_unavailable`) and is replaced. `close()` lets every
 * accepted image finish.
 */
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { ImageGenError } from '../../../core/errors';
import type { ConvertedUploadFacts, GeneratedImageFacts, MarkedImage, ProvenanceMarker } from './provenance-marker';
import type { MarkingJob, MarkingWorkerData } from './marking-worker';

export interface MarkingPoolOptions {
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

type JobBody = { kind: 'generated'; facts: GeneratedImageFacts } | { kind: 'converted'; facts: ConvertedUploadFacts };

interface Pending {
	body: JobBody;
	resolve: (marked: MarkedImage) => void;
	reject: (error: unknown) => void;
}

interface PoolWorker {
	worker: Worker;
	/** The job it is marking, by id. */
	busyWith: { id: number; pending: Pending } | undefined;
	/** Started its script; one that dies before is not started again (it would die again). */
	online: boolean;
}

type WorkerAnswer = { id: number; marked: MarkedImage } | { id: number; error: string };

export class MarkingPool implements ProvenanceMarker {
	private readonly workers: PoolWorker[] = [];
	private readonly queue: Pending[] = [];
	private readonly maxQueued: number;
	private readonly workerScript: string;
	private nextId = 1;
	private closing = false;
	private idle: (() => void) | undefined;
	private started = false;

	constructor(private readonly options: MarkingPoolOptions) {
		this.maxQueued = options.maxQueued ?? 64;
		this.workerScript = options.workerScript ?? MARKING_WORKER_SCRIPT;
	}

	/** Whether an image submitted now would be accepted. */
	canTake(): boolean {
		return !this.closing && this.queue.length < this.maxQueued && (!this.started || this.workers.length > 0);
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
		if (this.queue.length > 0 || this.workers.some((entry) => entry.busyWith)) await new Promise<void>((resolve) => (this.idle = resolve));
		await Promise.all(this.workers.map((entry) => entry.worker.terminate()));
	}

	private submit(body: JobBody): Promise<MarkedImage> {
		this.start();
		if (this.closing) return Promise.reject(unavailable('the service is shutting down'));
		if (this.workers.length === 0) return Promise.reject(unavailable('no marking worker could be started'));
		if (this.queue.length >= this.maxQueued) {
			return Promise.reject(new ImageGenError(503, 'Too many images are waiting to be marked; retry shortly', { code: 'provenance_busy' }));
		}
		return new Promise<MarkedImage>((resolve, reject) => {
			this.queue.push({ body, resolve, reject });
			this.dispatch();
		});
	}

	private start(): void {
		if (this.started || this.closing) return;
		this.started = true;
		for (let index = 0; index < (this.options.threads ?? 1); index++) this.workers.push(this.spawn());
	}

	private dispatch(): void {
		for (const entry of this.workers) {
			if (entry.busyWith || this.queue.length === 0) continue;
			const pending = this.queue.shift()!;
			const id = this.nextId++;
			entry.busyWith = { id, pending };
			entry.worker.postMessage({ id, ...pending.body } as MarkingJob);
		}
		if (this.closing && this.queue.length === 0 && !this.workers.some((entry) => entry.busyWith)) this.idle?.();
	}

	private spawn(): PoolWorker {
		const entry: PoolWorker = { worker: new Worker(this.workerScript, { workerData: this.options.workerData }), busyWith: undefined, online: false };
		entry.worker.once('online', () => (entry.online = true));
		entry.worker.on('message', (answer: WorkerAnswer) => {
			const job = entry.busyWith;
			if (!job || job.id !== answer.id) return;
			entry.busyWith = undefined;
			if ('error' in answer) job.pending.reject(new Error(`marking the image failed: ${answer.error}`));
			else job.pending.resolve({ ...answer.marked, bytes: Buffer.from(answer.marked.bytes.buffer, answer.marked.bytes.byteOffset, answer.marked.bytes.byteLength) });
			this.dispatch();
		});
		// A worker that dies takes only its own image with it; the next image gets a new worker.
		entry.worker.once('error', (error) => this.replace(entry, error));
		entry.worker.once('exit', (code) => this.replace(entry, new Error(`the marking worker exited with code ${code}`)));
		// The pool alone never keeps the process alive.
		entry.worker.unref();
		return entry;
	}

	private replace(entry: PoolWorker, cause: Error): void {
		const index = this.workers.indexOf(entry);
		if (index === -1) return;
		const job = entry.busyWith;
		entry.busyWith = undefined;
		job?.pending.reject(unavailable('the worker marking it stopped', cause));
		if (this.closing || !entry.online) this.workers.splice(index, 1);
		else this.workers[index] = this.spawn();
		// Images still queued when the last worker could not start would wait for ever.
		if (this.workers.length === 0) for (const pending of this.queue.splice(0)) pending.reject(unavailable('no marking worker could be started', cause));
		this.dispatch();
	}
}

function unavailable(why: string, cause?: Error): ImageGenError {
	return new ImageGenError(503, `The image could not be marked with its provenance: ${why}; retry`, { code: 'provenance_unavailable', ...(cause ? { cause } : {}) });
}
