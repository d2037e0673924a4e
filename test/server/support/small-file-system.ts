/**
 * A real file system that fills up: a tmpfs of a few MiB mounted in a temporary directory for the
 * suite, so a full disk is the kernel's own ENOSPC, not a write function swapped in. Mounting needs
 * root (CI runs as root); where it is refused the suite's tests are skipped and the reason is
 * printed, never passed quietly. `useSmallFileSystem` mounts as the suite is collected (whether its
 * tests run is decided then) and unmounts in afterAll.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, truncateSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallFileSystem {
	/** The mount point; null when mounting was refused. */
	readonly path: string | null;
	/** `it` when mounted, `it.skip` when not. */
	readonly it: jest.It;
	/**
	 * Writes `name` (under the mount point) until the file system refuses, and answers its path:
	 * nothing fits after this, `leaveBytes` aside (left free by giving back the filler's tail).
	 */
	fill(name: string, leaveBytes?: number): string;
	/** Bytes still free. */
	freeBytes(): number;
}

/** Mounts a `sizeMiB` tmpfs for the suite (see the top of this file). */
export function useSmallFileSystem(sizeMiB: number): SmallFileSystem {
	const mounted = mount(sizeMiB);
	if (typeof mounted !== 'string') {
		process.stderr.write(`small-file-system: the tests of this suite are skipped: ${mounted.refused}\n`);
	} else {
		afterAll(() => {
			const unmounted = spawnSync('umount', [mounted], { encoding: 'utf8' });
			if (unmounted.status !== 0) throw new Error(`umount ${mounted} failed: ${unmounted.stderr || unmounted.error?.message}`);
			rmSync(mounted, { recursive: true, force: true });
		});
	}
	const path = typeof mounted === 'string' ? mounted : null;
	return {
		path,
		it: path ? it : it.skip,
		fill(name, leaveBytes = 0) {
			if (!path) throw new Error('small-file-system: nothing is mounted');
			return fill(join(path, name), leaveBytes);
		},
		freeBytes() {
			if (!path) throw new Error('small-file-system: nothing is mounted');
			const stats = statfsSync(path);
			return stats.bavail * stats.bsize;
		},
	};
}

function mount(sizeMiB: number): string | { refused: string } {
	if (process.getuid?.() !== 0) return { refused: 'mounting a tmpfs needs root, and this process is not root' };
	const mountPoint = mkdtempSync(join(tmpdir(), 'imagegen-small-fs-'));
	const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', mountPoint], { encoding: 'utf8' });
	if (mounted.status !== 0) {
		rmSync(mountPoint, { recursive: true, force: true });
		return { refused: `mount -t tmpfs was refused: ${(mounted.stderr || mounted.error?.message || `exit ${mounted.status}`).trim()}` };
	}
	return mountPoint;
}

/** Writes until ENOSPC, halving the chunk down to one byte so not even a page is left, then frees `leaveBytes`. */
function fill(file: string, leaveBytes: number): string {
	const descriptor = openSync(file, 'w');
	const chunk = Buffer.alloc(64 * 1024, 7);
	let written = 0;
	try {
		for (let size = chunk.length; size >= 1; size = Math.floor(size / 2)) {
			try {
				for (;;) written += writeSync(descriptor, chunk, 0, size);
			} catch (error) {
				if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
			}
		}
	} finally {
		closeSync(descriptor);
	}
	if (leaveBytes > 0) truncateSync(file, Math.max(0, written - leaveBytes));
	return file;
}
