/**
 * Which code bit each coefficient carries, and with which sign. Every code bit is spread over
 * coefficients scattered across the whole grid, so a damaged region (clipped highlights, a
 * caption, a compressed corner) costs each bit a little rather than some bits everything; the
 * signs make the pattern noise-like, so a picture's own structure does not line up with it.
 * The sequence is public and fixed (anyone can read the mark, as with a barcode): xorshift32 from
 * SPREADING_SEED, a Fisher–Yates shuffle, then one sign per coefficient.
 */
import { coefficientCount } from './block-coefficients';
import type { Grid } from './canonical-grid';

export const SPREADING_SEED = 0x2545f491;

export interface Spreading {
	/** For each coefficient (block-coefficients.ts's order), the code bit it carries. */
	bitOf: Uint16Array;
	/** For each coefficient, +1 or −1: the direction that means a code bit of 1. */
	sign: Float32Array;
	/** For each code bit, how many coefficients carry it. */
	carriers: Uint32Array;
}

/** xorshift32 (Marsaglia, 2003): 13, 17, 5; never zero from a non-zero seed. */
export function xorshift32(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state ^= state << 13;
		state >>>= 0;
		state ^= state >>> 17;
		state ^= state << 5;
		state >>>= 0;
		return state;
	};
}

function spread(grid: Grid, codeBits: number): Spreading {
	const count = coefficientCount(grid);
	const next = xorshift32(SPREADING_SEED);
	const order = new Uint32Array(count);
	for (let i = 0; i < count; i++) order[i] = i;
	for (let i = count - 1; i > 0; i--) {
		const j = next() % (i + 1);
		[order[i], order[j]] = [order[j]!, order[i]!];
	}
	const bitOf = new Uint16Array(count);
	const sign = new Float32Array(count);
	const carriers = new Uint32Array(codeBits);
	for (let i = 0; i < count; i++) {
		bitOf[i] = order[i]! % codeBits;
		carriers[bitOf[i]!]!++;
	}
	for (let i = 0; i < count; i++) sign[i] = next() & 1 ? 1 : -1;
	return { bitOf, sign, carriers };
}

/** Grids are few (one per proportion the detection meets): each one's spreading is made once. */
const made = new Map<string, Spreading>();

export function spreadingFor(grid: Grid, codeBits: number): Spreading {
	const key = `${grid.columns}x${grid.rows}/${codeBits}`;
	let spreading = made.get(key);
	if (spreading === undefined) {
		spreading = spread(grid, codeBits);
		made.set(key, spreading);
	}
	return spreading;
}

/**
 * What one coefficient may weigh in a reading, in luma levels: an edge or a letter makes a few
 * coefficients a hundred times larger than the rest, and unlimited they would outvote the mark in
 * every bit they share; limited, they count as much as a coefficient the mark moved.
 */
export const COEFFICIENT_LIMIT = 5;

/** `value` held within ±`bound`, by comparisons: no global read in the loops (pixel-change.ts says why). */
export function limited(value: number, bound: number): number {
	return value < -bound ? -bound : value > bound ? bound : value;
}

/** Each code bit's reading: the mean of its coefficients, each limited and times its sign (positive reads 1). */
export function readCodeBits(coefficients: Float32Array, spreading: Spreading): Float32Array {
	const sums = new Float32Array(spreading.carriers.length);
	for (let i = 0; i < coefficients.length; i++) {
		sums[spreading.bitOf[i]!]! += spreading.sign[i]! * limited(coefficients[i]!, COEFFICIENT_LIMIT);
	}
	for (let bit = 0; bit < sums.length; bit++) sums[bit]! /= spreading.carriers[bit]!;
	return sums;
}
