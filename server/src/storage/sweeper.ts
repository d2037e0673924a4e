/**
 * Periodic deletion of expired files. Reads never depend on it (expiry is checked on every read);
 * it exists so that bytes actually leave the storage.
 */
export interface Sweepable {
	sweep(): Promise<unknown>;
}

export interface Sweeper {
	stop(): Promise<void>;
}

export function sweepInterval(retentionSeconds: number): number {
	return Math.max(250, Math.min(60_000, (retentionSeconds * 1000) / 2));
}

export function startSweeper(target: Sweepable, intervalMs: number, onError: (error: unknown) => void): Sweeper {
	let current: Promise<void> | null = null;
	let stopped = false;
	const run = () => {
		// A slow sweep (a huge directory, a slow bucket) is never overlapped by the next one.
		if (current || stopped) return;
		current = target
			.sweep()
			.then(() => undefined, onError)
			.finally(() => {
				current = null;
			});
	};
	run();
	const timer = setInterval(run, intervalMs);
	timer.unref();
	return {
		async stop() {
			stopped = true;
			clearInterval(timer);
			await current;
		},
	};
}
