/**
 * Where a generation's time went, for its answer's `Server-Timing` header (routes/generations.ts):
 * waiting on the host (its calls, and the download of an image it answered as a URL) and marking
 * the images, each summed over the generation's images. One per generation, handed in by its caller
 * (GenerationCaller.timings) and read once the answer is there.
 */
export class GenerationTimings {
	/** Milliseconds spent on the host's share. */
	hostMs = 0;
	/** Milliseconds spent marking; undefined when nothing was marked (`--provenance off`). */
	markMs: number | undefined;

	timeHost<T>(work: () => Promise<T>): Promise<T> {
		return timed(work, (ms) => (this.hostMs += ms));
	}

	timeMark<T>(work: () => Promise<T>): Promise<T> {
		return timed(work, (ms) => (this.markMs = (this.markMs ?? 0) + ms));
	}
}

/** Runs `work`, then tells `add` how long it took, whether it succeeded or not. */
async function timed<T>(work: () => Promise<T>, add: (ms: number) => void): Promise<T> {
	const started = performance.now();
	try {
		return await work();
	} finally {
		add(performance.now() - started);
	}
}
