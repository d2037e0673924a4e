/**
 * A single-range `Range: bytes=…` header (RFC 9110 §14). Multiple ranges are answered with the
 * whole file, which the RFC allows and no media player needs otherwise.
 */
import type { ByteRange } from '../storage/object-storage';

/** null → ignore the header (serve everything); 'unsatisfiable' → 416. */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
	const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
	if (!match) return null;
	const [, first, last] = match as unknown as [string, string, string];
	if (first === '' && last === '') return null;
	if (first === '') {
		const suffix = Number(last);
		if (suffix === 0 || size === 0) return 'unsatisfiable';
		return { start: Math.max(0, size - suffix), end: size - 1 };
	}
	const start = Number(first);
	if (start >= size) return 'unsatisfiable';
	const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
	if (end < start) return null;
	return { start, end };
}
