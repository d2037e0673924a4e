/**
 * The service's log lines on standard output, written so that a destination that fails never
 * holds up a request or takes the process down: on a full disk (stdout redirected to a file) a
 * line that cannot be written is dropped and counted, and the first line written once the disk
 * has room again says how many went.
 *
 * Not pino's own destination (sonic-boom): a failed write there is an 'error' event nobody
 * listens to, so the process crashes, and on its way out the exit handler's synchronous flush
 * retries a write the disk refuses every 100 ms, blocking the event loop until space is freed.
 * Here writes are asynchronous, lines wait in a bounded queue (a reader that stalls a pipe makes
 * lines drop, never memory grow), and the flush at exit tries each line once.
 */
import { write as writeAsync, writeSync } from 'node:fs';
import { hostname } from 'node:os';

/** Lines waiting for the destination: a burst of errors fits, a destination stuck for good costs no more. */
const MAX_QUEUED_BYTES = 1024 * 1024;
/** Lines handed to one write call. */
const MAX_WRITE_BYTES = 64 * 1024;
/** A pipe whose reader is behind (EAGAIN) is tried again after this. */
const BUSY_RETRY_MS = 50;

export class LogDestination {
	private queue: string[] = [];
	private queuedBytes = 0;
	/** Lines of the write under way: a partial write leaves the rest of its bytes in `pending`. */
	private inFlightLines = 0;
	private pending: Buffer | null = null;
	/** A write that failed part way left a line cut short: the next write starts on a line of its own. */
	private lineCut = false;
	private dropped = 0;
	/** Drops said in a line written (or being written) so far, and why the last ones went. */
	private reportedDropped = 0;
	private reportInFlight = 0;
	private dropReason = '';

	constructor(
		private readonly fd: number,
		private readonly maxQueuedBytes = MAX_QUEUED_BYTES,
	) {}

	/** Lines dropped so far because the destination refused them or the queue was full. */
	get droppedLines(): number {
		return this.dropped;
	}

	/** pino's call for each line; never throws, never waits. */
	write(line: string): boolean {
		const bytes = Buffer.byteLength(line);
		if (this.queuedBytes + bytes > this.maxQueuedBytes) {
			this.drop(1, 'the destination fell behind', false);
			return false;
		}
		this.queue.push(line);
		this.queuedBytes += bytes;
		if (this.pending === null) this.writeNext();
		return true;
	}

	/** At exit (and on a fatal line): what is queued, each line tried once, synchronously. */
	flushSync(): void {
		const lines = this.takeQueued(Number.POSITIVE_INFINITY);
		if (lines.length === 0) return;
		try {
			writeSync(this.fd, this.withDropReport(lines.join('')));
		} catch (error) {
			this.drop(lines.length, (error as NodeJS.ErrnoException).code ?? 'write failed');
		}
	}

	private writeNext(): void {
		const lines = this.takeQueued(MAX_WRITE_BYTES);
		if (lines.length === 0) return;
		this.inFlightLines = lines.length;
		this.pending = Buffer.from(this.withDropReport(lines.join('')));
		this.writePending();
	}

	private writePending(): void {
		const chunk = this.pending!;
		writeAsync(this.fd, chunk, 0, chunk.length, null, (error, written) => {
			if (error && (error as NodeJS.ErrnoException).code === 'EAGAIN') {
				setTimeout(() => this.writePending(), BUSY_RETRY_MS).unref();
				return;
			}
			if (!error && written < chunk.length) {
				this.pending = chunk.subarray(written);
				this.lineCut = true;
				this.writePending();
				return;
			}
			// A full disk (ENOSPC, EDQUOT), a closed pipe, an I/O error: these lines are lost, the next may pass.
			if (error) this.drop(this.inFlightLines, (error as NodeJS.ErrnoException).code ?? 'write failed');
			else this.reportInFlight = 0;
			if (!error) this.lineCut = false;
			this.pending = null;
			this.inFlightLines = 0;
			this.writeNext();
		});
	}

	/** Queued lines from the front, up to `maxBytes` (at least one). */
	private takeQueued(maxBytes: number): string[] {
		const lines: string[] = [];
		let bytes = 0;
		while (this.queue.length > 0) {
			const size = Buffer.byteLength(this.queue[0]!);
			if (lines.length > 0 && bytes + size > maxBytes) break;
			lines.push(this.queue.shift()!);
			bytes += size;
		}
		this.queuedBytes -= bytes;
		return lines;
	}

	/** `lines` lost; when they were a write the destination refused, the report among them is owed again. */
	private drop(lines: number, reason: string, refused = true): void {
		this.dropped += lines;
		this.dropReason = reason;
		if (!refused) return;
		this.reportedDropped -= this.reportInFlight;
		this.reportInFlight = 0;
	}

	/**
	 * `text`, after a line (as pino writes them) saying how many were dropped since the last such
	 * line, if any; on a line of its own when the last write stopped inside one.
	 */
	private withDropReport(text: string): string {
		const unreported = this.dropped - this.reportedDropped;
		const start = this.lineCut ? '\n' : '';
		if (unreported === 0) return `${start}${text}`;
		this.reportedDropped = this.dropped;
		this.reportInFlight = unreported;
		const msg = `${unreported} log lines were dropped (last: ${this.dropReason})`;
		return `${start}${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, hostname: hostname(), droppedLines: unreported, msg })}\n${text}`;
	}
}

let standardOutput: LogDestination | undefined;

/**
 * The process's standard output as the log, made once: its lines written at exit, and an error of
 * `process.stdout` itself (the CLI's ready lines on a full disk) ignored instead of crashing.
 */
export function standardOutputLog(): LogDestination {
	if (standardOutput) return standardOutput;
	const destination = new LogDestination(1);
	process.stdout.on('error', () => undefined);
	process.once('exit', () => destination.flushSync());
	standardOutput = destination;
	return destination;
}
