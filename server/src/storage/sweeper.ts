/**
 * Periodic deletion of expired files and idempotency entries. Reads never depend on it (expiry is
 * checked on every read); it exists so that bytes and remembered answers actually go away.
 */
interface Sweepable {
	sweep(): Promise<unknown>;
}

export interface Sweeper {
	stop(): Promise<void>;
}

export function sweepInterval(retentionSeconds: number): number {
	return Math.max(250, Math.min(60_000, (retentionSeconds * 1000) / 2));
}

interface SweepReports {
	onError(error: unknown): void;
	/**
	 * After every pass over all targets: how long it took and whether every target succeeded. The
	 * operator's proof that expired data really goes (a metric), and a test's signal to wait on.
	 */
	onFinished?(seconds: number, succeeded: boolean): void;
}

/** Sweeps every target in turn; one that fails is reported and does not stop the others. */
export function startSweeper(targets: readonly Sweepable[], intervalMs: number, reports: SweepReports): Sweeper {
	let current: Promise<void> | null = null;
	let stopped = false;
	const sweepAll = async () => {
		const started = performance.now();
		let succeeded = true;
		for (const target of targets) {
			await target.sweep().then(
				() => undefined,
				(error: unknown) => {
					succeeded = false;
					reports.onError(error);
				},
			);
		}
		reports.onFinished?.((performance.now() - started) / 1000, succeeded);
	};
	const run = () => {
		// A slow sweep (a huge directory, a slow bucket) is never overlapped by the next one.
		if (current || stopped) return;
		current = sweepAll().finally(() => {
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
