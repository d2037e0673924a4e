/**
 * Who runs a job: this machine, this process and an id of this start (`<machine>/<pid>/<start>`),
 * so that a service restarted on the same machine (after a crash, kill -9) can tell its
 * predecessor is gone and take over its jobs at once instead of waiting out their lease. A holder
 * of another machine, or of a live process here, is left to its lease.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** The machine: systemd's machine id where there is one (stable, unique), else the host name. */
function machineName(): string {
	for (const path of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
		try {
			const id = readFileSync(path, 'utf8').trim();
			if (id) return `${hostname()}#${id}`;
		} catch {
			// Not there (not Linux, or a minimal container): the host name alone.
		}
	}
	return hostname();
}

const MACHINE = machineName();

/**
 * The holders this process made and still runs jobs as: two services in one process (tests, an
 * embedding program) share its pid, and neither may take the other's jobs as a dead predecessor's.
 */
const OWN_HOLDERS = new Set<string>();

/** A new holder of this process, live until `holderStopped`. */
export function processHolder(): string {
	const holder = `${MACHINE}/${process.pid}/${randomUUID()}`;
	OWN_HOLDERS.add(holder);
	return holder;
}

/** The holder runs no more jobs here (its runner closed): a later start in this process may take its jobs over. */
export function holderStopped(holder: string): void {
	OWN_HOLDERS.delete(holder);
}

/** Whether a process of this machine with this pid runs now (one we may not signal runs too). */
function processAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return (error as NodeJS.ErrnoException).code === 'EPERM';
	}
}

/**
 * Whether `holder` was a process of this machine that is no longer running: its pid is free, or is
 * this process's own (a container restarted gives the service the same pid) while the holder is
 * none this process runs.
 */
export function holderGone(holder: string, self: string): boolean {
	const at = holder.lastIndexOf('/', holder.lastIndexOf('/') - 1);
	if (at < 0 || holder === self || holder.slice(0, at) !== MACHINE) return false;
	const pid = Number(holder.slice(at + 1, holder.lastIndexOf('/')));
	if (!Number.isSafeInteger(pid) || pid <= 0) return false;
	return pid === process.pid ? !OWN_HOLDERS.has(holder) : !processAlive(pid);
}
