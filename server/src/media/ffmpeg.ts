/**
 * Runs the ffmpeg binary that ships in the `@ffmpeg-installer/ffmpeg` package (a static build, so
 * nothing has to be installed on the host). Arguments go as an array, never through a shell, so no
 * prompt or path is ever read as shell syntax. A run stops (its process killed) when the caller's
 * signal aborts or its time runs out; only the tail of stderr is kept, since ffmpeg prints a line
 * per second of progress and the reason it failed comes last.
 */
import { spawn } from 'node:child_process';

/** How much of stderr an error message keeps: ffmpeg's reason for failing is in its last lines. */
const STDERR_TAIL_BYTES = 4096;
const DEFAULT_TIMEOUT_MS = 120_000;

export interface FfmpegOptions {
	/** Aborting it kills the process; the run rejects with the signal's reason. */
	signal?: AbortSignal;
	/** The longest the run may take before it is killed. */
	timeoutMs?: number;
	/** What the run does, for the error message ("render the sandbox video"). */
	what: string;
}

let resolvedPath: string | undefined;

/** The binary's path, looked up on first use: a server that never touches video never loads the package. */
export function ffmpegPath(): string {
	if (resolvedPath === undefined) {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		resolvedPath = (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
	}
	return resolvedPath;
}

/** Keeps the last `limit` bytes written to it. */
class Tail {
	private chunks: Buffer[] = [];
	private length = 0;
	constructor(private readonly limit: number) {}
	push(chunk: Buffer): void {
		this.chunks.push(chunk);
		this.length += chunk.length;
		while (this.chunks.length > 1 && this.length - this.chunks[0]!.length >= this.limit) this.length -= this.chunks.shift()!.length;
	}
	text(): string {
		const all = Buffer.concat(this.chunks);
		return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8').trim();
	}
}

/**
 * Runs ffmpeg with `args` (`-hide_banner -nostdin` are added) and resolves when it exits with 0.
 * Rejects with the signal's reason when aborted, or an Error naming `what` with ffmpeg's last
 * stderr lines when it fails, cannot start or runs out of time.
 */
export function runFfmpeg(args: readonly string[], options: FfmpegOptions): Promise<void> {
	const { signal, what } = options;
	const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
	if (signal?.aborted) return Promise.reject(signal.reason);
	return new Promise((resolve, reject) => {
		const child = spawn(ffmpegPath(), ['-hide_banner', '-nostdin', ...args], { stdio: ['ignore', 'ignore', 'pipe'], windowsHide: true });
		const stderr = new Tail(STDERR_TAIL_BYTES);
		let stopped: unknown;
		const stop = (reason: unknown) => {
			if (stopped !== undefined) return;
			stopped = reason;
			child.kill('SIGKILL');
		};
		const onAbort = () => stop(signal!.reason ?? new Error(`ffmpeg could not ${what}: aborted`));
		const timer = setTimeout(() => stop(new Error(`ffmpeg could not ${what}: it took longer than ${timeoutMs} ms`)), timeoutMs);
		signal?.addEventListener('abort', onAbort, { once: true });
		child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
		const settle = (error: unknown) => {
			clearTimeout(timer);
			signal?.removeEventListener('abort', onAbort);
			if (error === undefined) resolve();
			else reject(error);
		};
		child.once('error', (error) => {
			stopped ??= new Error(`ffmpeg could not ${what}: ${error.message}`);
		});
		child.once('close', (code, killedBy) => {
			if (stopped !== undefined) return settle(stopped);
			if (code === 0) return settle(undefined);
			const how = code === null ? `was killed by ${killedBy}` : `exited with code ${code}`;
			settle(new Error(`ffmpeg could not ${what} (it ${how}): ${stderr.text() || 'no output'}`));
		});
	});
}
