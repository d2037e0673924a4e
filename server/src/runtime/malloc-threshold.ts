/**
 * Restarts the CLI in place (`process.execve`: same process id, same
 * standard streams) with glibc's mmap threshold fixed, unless the operator set it.
 *
 * glibc serves an allocation above that threshold with a mapping of its own and gives it back to
 * the system when freed; but each such free raises the threshold to the freed size, up to 32 MiB.
 * Image work and inline answers allocate and free buffers of several MB per request (decoded
 * pixels, encoded PNGs, the answer's text on its way to the socket and into the database), so
 * after the first requests those buffers come from the allocator's arenas instead, where freed
 * memory stays resident and the next long-lived small allocation pins it. Measured under Node 24
 * with 150 idempotent `b64_json` generations of 4 MB each (bench/idempotency-memory.mjs): the main
 * arena reached 100 MB and the thread arenas 112 MB, and resident memory grew 94 MB against 41 MB
 * for the same generations without a key; with the threshold fixed at glibc's default 128 KiB, 13
 * and 35 MB, and 25 MB of growth either way.
 *
 * glibc reads the variable once, when the process starts: hence the restart, before anything else
 * is loaded (malloc-threshold-at-start.ts). Node 20 has no `process.execve`; there the operator sets the variable (README). Other
 * C libraries ignore it.
 */
export const MMAP_THRESHOLD_VARIABLE = 'MALLOC_MMAP_THRESHOLD_';
/** glibc's own starting threshold, kept from moving. */
export const MMAP_THRESHOLD_BYTES = 128 * 1024;

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * Commands that run for a moment (`keys`, `backup`) hold no image buffers: a restart would only
 * add its cost to them. The service is what runs for months.
 */
const ONE_SHOT_COMMANDS = new Set(['keys', 'backup']);

/** Whether `imagegen-server <command>` should run with the threshold fixed: the service, unless the operator set it. */
export function wantsFixedMmapThreshold(command: string | undefined, env: NodeJS.ProcessEnv): boolean {
	return !ONE_SHOT_COMMANDS.has(command ?? '') && env[MMAP_THRESHOLD_VARIABLE] === undefined;
}

/** Does not return when it restarts the process; otherwise does nothing. */
export function restartWithFixedMmapThreshold(): void {
	const execve = (process as unknown as { execve?: Execve }).execve;
	if (process.platform !== 'linux' || !wantsFixedMmapThreshold(process.argv[2], process.env) || typeof execve !== 'function') return;
	execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
		...process.env,
		[MMAP_THRESHOLD_VARIABLE]: String(MMAP_THRESHOLD_BYTES),
	});
}
