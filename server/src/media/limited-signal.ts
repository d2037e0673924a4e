/**
 * A signal that stops at a time limit or when its parent does, and `done()`, which undoes both
 * ties once the work it bounds has ended. AbortSignal.timeout and AbortSignal.any make the same
 * signal, but their timer and the tie to a long-lived parent outlive the work, and with them
 * everything the work's listeners reach (a finished generation's images, for the whole limit).
 * It lives beside the image queue, its first user, rather than in core/: core ships in the nodes'
 * package, where n8n's scanner refuses timers.
 */
interface LimitedSignal {
	readonly signal: AbortSignal;
	/** The limit, not the parent, stopped it. */
	readonly timedOut: boolean;
	done(): void;
}

export function limitedSignal(parent: AbortSignal | undefined, limitMs: number, timeoutReason: () => unknown): LimitedSignal {
	const stop = new AbortController();
	let timedOut = false;
	const timer = setTimeout(() => {
		timedOut = true;
		stop.abort(timeoutReason());
	}, limitMs);
	const onParentStopped = () => stop.abort(parent!.reason);
	parent?.addEventListener('abort', onParentStopped, { once: true });
	if (parent?.aborted) onParentStopped();
	return {
		signal: stop.signal,
		get timedOut() {
			return timedOut;
		},
		done() {
			clearTimeout(timer);
			parent?.removeEventListener('abort', onParentStopped);
		},
	};
}
