/**
 * Calls that wait while one is under way, sent on together when it ends: under load a replica
 * makes one database round trip for many requests, and when idle a call goes out at once.
 */
interface Waiting<I, O> {
	item: I;
	resolve: (output: O) => void;
	reject: (error: unknown) => void;
}

export class Batcher<I, O> {
	private waiting: Array<Waiting<I, O>> = [];
	private running = false;

	/** `run` answers one output per item, in order; `onIdle` is told when nothing is queued or running. */
	constructor(
		private readonly run: (items: I[]) => Promise<O[]>,
		private readonly maxBatch = 256,
		private readonly onIdle?: () => void,
	) {}

	submit(item: I): Promise<O> {
		return new Promise<O>((resolve, reject) => {
			this.waiting.push({ item, resolve, reject });
			this.next();
		});
	}

	private next(): void {
		if (this.running) return;
		if (this.waiting.length === 0) {
			this.onIdle?.();
			return;
		}
		this.running = true;
		const batch = this.waiting.splice(0, this.maxBatch);
		this.run(batch.map((waiting) => waiting.item)).then(
			(outputs) => batch.forEach((waiting, index) => waiting.resolve(outputs[index]!)),
			(error: unknown) => batch.forEach((waiting) => waiting.reject(error)),
		).finally(() => {
			this.running = false;
			this.next();
		});
	}
}
