/**
 * Every sharp pipeline of the service runs through this small queue. A pipeline holds one thread of
 * libuv's pool (4 by default) from start to end, and file reads and writes queue for the same pool:
 * four big fits at once used to stall every download while /healthz stayed fast.
 * So at most `concurrency` pipelines run (libvips spreads each over the cores by itself), a few
 * more wait, and everyone else hears 503 with Retry-After at once instead of waiting unseen.
 * A task has one time budget (waiting included), stops when its client leaves, and sharp's own
 * `timeout` ends a pipeline that outlives the budget; the CLI also widens the pool (cli.ts).
 */
import { ImageGenError } from '../../../core/errors';
import { limitedSignal } from './limited-signal';

interface ImageWorkOptions {
	/** Largest picture decoded (`--max-image-pixels`); also each pipeline's `limitInputPixels`. */
	maxPixels: number;
	/** Pipelines running at once. */
	concurrency?: number;
	/** Tasks waiting for a pipeline; one more is refused with 503. */
	maxQueued?: number;
	/** Waiting plus working, per task. */
	budgetMs?: number;
}

/** What a running task gets: its stop signal and the limits to put on each `sharp()` it makes. */
export interface ImageTask {
	/** Aborted when the client leaves or the budget is spent. */
	readonly signal: AbortSignal;
	/** For `sharp(input, { limitInputPixels })`. */
	readonly limitInputPixels: number;
	/** Whole seconds left, for `pipeline.timeout({ seconds })` (at least 1). */
	timeoutSeconds(): number;
	/** Between steps of a long task: stops it when its client left or its budget ran out. */
	throwIfStopped(): void;
}

const IMAGE_WORK_DEFAULTS = {
	// Two pipelines leave the pool's other threads to file reads and writes while fits run; each
	// pipeline is parallel inside libvips already, so more would only queue on the cores.
	concurrency: 2,
	// Enough for a burst of small tasks (many generations at once, each a short render);
	// the pixel limit bounds each task and the budget bounds how long any of them waits.
	maxQueued: 100,
	budgetMs: 60_000,
} as const;

const RETRY_AFTER_SECONDS = 5;

interface Waiter {
	start(): void;
}

export class ImageWork {
	readonly maxPixels: number;
	private readonly concurrency: number;
	private readonly maxQueued: number;
	private readonly budgetMs: number;
	private running = 0;
	private readonly waiting: Waiter[] = [];

	constructor(options: ImageWorkOptions) {
		this.maxPixels = options.maxPixels;
		this.concurrency = options.concurrency ?? IMAGE_WORK_DEFAULTS.concurrency;
		this.maxQueued = options.maxQueued ?? IMAGE_WORK_DEFAULTS.maxQueued;
		this.budgetMs = options.budgetMs ?? IMAGE_WORK_DEFAULTS.budgetMs;
	}

	/** Pipelines running and tasks waiting now. */
	get load(): { running: number; waiting: number } {
		return { running: this.running, waiting: this.waiting.length };
	}

	/**
	 * Runs `work` once a pipeline is free. Throws 503 `image_work_busy` (Retry-After) when the queue
	 * is full or the wait outlasts the budget, 503 `image_work_timeout` when the work does, and the
	 * client's abort reason when it left.
	 */
	async run<T>(work: (task: ImageTask) => Promise<T>, options: { signal?: AbortSignal } = {}): Promise<T> {
		const client = options.signal;
		client?.throwIfAborted();
		const deadline = Date.now() + this.budgetMs;
		await this.acquire(deadline, client);
		const limit = limitedSignal(client, Math.max(1, deadline - Date.now()), () => new DOMException('the image budget ran out', 'TimeoutError'));
		const { signal } = limit;
		const stopped = (): unknown => (limit.timedOut && !client?.aborted ? this.overBudget() : signal.reason);
		const task: ImageTask = {
			signal,
			limitInputPixels: this.maxPixels,
			timeoutSeconds: () => Math.max(1, Math.ceil((deadline - Date.now()) / 1000)),
			throwIfStopped: () => {
				if (signal.aborted) throw stopped();
			},
		};
		try {
			const result = await work(task);
			task.throwIfStopped();
			return result;
		} catch (error) {
			// sharp's own timeout, or anything else failing after the budget ran out, is the budget's doing.
			if (signal.aborted) throw stopped();
			throw error;
		} finally {
			limit.done();
			this.release();
		}
	}

	private acquire(deadline: number, client: AbortSignal | undefined): Promise<void> {
		if (this.running < this.concurrency) {
			this.running++;
			return Promise.resolve();
		}
		if (this.waiting.length >= this.maxQueued) return Promise.reject(this.busy('too many images are being processed'));
		return new Promise<void>((resolve, reject) => {
			const leave = (error: unknown) => {
				const index = this.waiting.indexOf(waiter);
				if (index >= 0) this.waiting.splice(index, 1);
				clearTimeout(timer);
				client?.removeEventListener('abort', onAbort);
				reject(error);
			};
			const onAbort = () => leave(client!.reason);
			const timer = setTimeout(() => leave(this.busy('the wait for image processing ran out of time')), Math.max(0, deadline - Date.now()));
			const waiter: Waiter = {
				start: () => {
					clearTimeout(timer);
					client?.removeEventListener('abort', onAbort);
					resolve();
				},
			};
			client?.addEventListener('abort', onAbort, { once: true });
			this.waiting.push(waiter);
		});
	}

	private release(): void {
		const next = this.waiting.shift();
		// The slot passes straight to the next task: `running` stays as it is.
		if (next) next.start();
		else this.running--;
	}

	private busy(why: string): ImageGenError {
		return new ImageGenError(503, `The server is busy processing images (${why}); retry in ${RETRY_AFTER_SECONDS} s`, {
			code: 'image_work_busy',
			retryAfterSeconds: RETRY_AFTER_SECONDS,
		});
	}

	private overBudget(): ImageGenError {
		return new ImageGenError(
			503,
			`Processing the image took longer than the ${this.budgetMs / 1000} s allowed; retry later, or send a smaller image or a larger max_bytes`,
			{ code: 'image_work_timeout', retryAfterSeconds: RETRY_AFTER_SECONDS },
		);
	}
}
