/**
 * Whether a process of this machine still runs: how a start tells a write killed mid-way from one
 * another process on the data dir is still doing. A recycled pid reads as alive, which only
 * leaves that write's leftovers to the sweep at its expiry.
 */
export function isProcessAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		// EPERM: it runs, under another user.
		return (error as NodeJS.ErrnoException).code !== 'ESRCH';
	}
}
