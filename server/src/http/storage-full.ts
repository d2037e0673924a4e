/**
 * "No room left" from any engine: the bytes' file system (ENOSPC, EDQUOT), a bucket's quota, or
 * the embedded database that cannot grow (SQLITE_FULL: its disk is full, or it reached its page
 * limit). All are one answer, 507 `insufficient_storage`, whichever write found it first: nothing
 * was stored, and the same request succeeds once space is freed.
 */
import { ImageGenError } from '../../../core/errors';

interface ErrorShape {
	code?: unknown;
	name?: unknown;
	cause?: unknown;
}

export function isStorageFull(error: unknown, depth = 0): boolean {
	if (typeof error !== 'object' || error === null || depth > 5 || error instanceof ImageGenError) return false;
	const { code, name, cause } = error as ErrorShape;
	if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL' || name === 'EntityTooLarge' || name === 'QuotaExceeded') return true;
	return isStorageFull(cause, depth + 1);
}

/** The 507; `cause` is kept for the log. */
export function insufficientStorage(cause?: unknown): ImageGenError {
	return new ImageGenError(507, 'The server has no storage space left for this file; try again later', {
		code: 'insufficient_storage',
		cause,
	});
}
