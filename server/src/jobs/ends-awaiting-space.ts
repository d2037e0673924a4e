/**
 * Ends of jobs that could not be written for want of space: the data dir's disk filled (SQLite's
 * SQLITE_FULL, the files' ENOSPC), so the row that says how the job ended cannot be committed
 * either. The run knows how it ended (its image did not fit: `insufficient_storage`), so the end
 * is written again, with the job's charge released in the same transaction, as soon as a write
 * goes through. Dropped, the job would stay running until its lease ran out and a recovery pass
 * ended it as cut off by a restart; while its end waits here, this process does not take it over.
 */
import { isStorageFull } from '../http/storage-full';
import type { JobEnd } from './job-store';

/** How soon a waiting end is tried again: a write costs one commit, and space may come back at any moment. */
const RETRY_MS = 1_000;

type WriteEnd = (id: string, end: JobEnd) => Promise<unknown>;
type LogError = (details: object, message: string) => void;

export class EndsAwaitingSpace {
	/** By job: the timer of its next try (or of the one under way). */
	private readonly waiting = new Map<string, NodeJS.Timeout>();
	private closed = false;

	/** `write`: the end with its charge released (null or any answer: written, or no longer this process's). */
	constructor(
		private readonly write: WriteEnd,
		private readonly logError: LogError,
		private readonly retryMs = RETRY_MS,
	) {}

	/** Whether job `id`'s end waits here: this process knows how it ended. */
	has(id: string): boolean {
		return this.waiting.has(id);
	}

	/** Writing `end` failed: kept and tried again when it was for want of space, logged otherwise. */
	failed(id: string, end: JobEnd, failure: unknown): void {
		if (this.closed || !isStorageFull(failure)) {
			this.waiting.delete(id);
			this.logError({ err: failure, job: id }, 'writing the end of a job failed');
			return;
		}
		if (!this.waiting.has(id)) this.logError({ err: failure, job: id, status: end.status }, 'the end of a job waits for storage space to be written');
		const timer = setTimeout(() => {
			this.write(id, end).then(
				() => this.waiting.delete(id),
				(error: unknown) => this.failed(id, end, error),
			);
		}, this.retryMs);
		// A waiting end never holds a process open: one stopped meanwhile leaves the job to the next start.
		timer.unref();
		this.waiting.set(id, timer);
	}

	/** Stops trying: the jobs still waiting are left to the next start's recovery. */
	close(): void {
		this.closed = true;
		for (const timer of this.waiting.values()) clearTimeout(timer);
		this.waiting.clear();
	}
}
