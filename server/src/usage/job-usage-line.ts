/**
 * A success's usage line as a job writes it: as statements of the transaction that ends the job
 * (jobs/job-runner.ts), so that the end and its billing line are one commit; or, when that
 * transaction cannot take it (the ledger's table failing while the rest of the database works),
 * recorded apart by the ledger, which keeps it (retried, and on disk with a pending file) until it
 * lands — the answer then waits at most USAGE_WAIT_MS for it. Counted once either way: by its
 * request id.
 */
import type { SqlStatement } from '../db/sql-adapter';
import type { UsageEntry, UsageLedger } from './usage-ledger';

/** How long an answer waits for its usage line to be durable when the ledger is failing. */
const USAGE_WAIT_MS = 2_000;

export interface JobUsageLine {
	statements: readonly SqlStatement[];
	/** The line to the ledger instead; resolves once durable, or after USAGE_WAIT_MS while the ledger keeps retrying. */
	recordApart(): Promise<void>;
}

export function jobUsageLine(ledger: UsageLedger, entry: UsageEntry, log: { error(details: object, message: string): void }): JobUsageLine {
	return {
		// Made when the job's end asks for them: a caller that is no job only ever records apart.
		get statements() {
			return ledger.statementsFor(entry);
		},
		async recordApart() {
			const recorded = ledger.record(entry).catch((error: unknown) => log.error({ err: error }, 'recording usage failed'));
			let gaveUp: NodeJS.Timeout | undefined;
			await Promise.race([recorded, new Promise((resolve) => (gaveUp = setTimeout(resolve, USAGE_WAIT_MS)))]);
			clearTimeout(gaveUp);
		},
	};
}
