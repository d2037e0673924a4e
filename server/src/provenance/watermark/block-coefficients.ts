/**
 * The coefficients the mark is written in: on each 8 × 8 block of the grid, twelve of the
 * orthonormal 2-D DCT-II's low-middle frequencies (u + v from 2 to 4). Lower ones carry most of
 * a picture's own energy, which the mark would have to outweigh; higher ones are what JPEG and
 * WebP quantize away and resizing blurs. On a 1024 px image one block is 32 px across, so these
 * are slow waves even after the image is halved and compressed.
 */
import { BLOCK_SIZE, type Grid } from './canonical-grid';

/** [u, v]: u cycles across, v down, in half-periods per block; the order coefficients are read in. */
export const MARKED_FREQUENCIES: readonly (readonly [number, number])[] = [
	[2, 0], [1, 1], [0, 2],
	[3, 0], [2, 1], [1, 2], [0, 3],
	[4, 0], [3, 1], [2, 2], [1, 3], [0, 4],
];

const SAMPLES_PER_BLOCK = BLOCK_SIZE * BLOCK_SIZE;

function dctBasis(u: number, v: number): Float32Array {
	const scale = (k: number) => Math.sqrt((k === 0 ? 1 : 2) / BLOCK_SIZE);
	const basis = new Float32Array(SAMPLES_PER_BLOCK);
	for (let y = 0; y < BLOCK_SIZE; y++) {
		for (let x = 0; x < BLOCK_SIZE; x++) {
			basis[y * BLOCK_SIZE + x] =
				scale(u) * scale(v) * Math.cos(((2 * x + 1) * u * Math.PI) / (2 * BLOCK_SIZE)) * Math.cos(((2 * y + 1) * v * Math.PI) / (2 * BLOCK_SIZE));
		}
	}
	return basis;
}

const BASES = MARKED_FREQUENCIES.map(([u, v]) => dctBasis(u, v));

/** Coefficients on the grid: blocks left to right, top to bottom, each block's MARKED_FREQUENCIES in order. */
export function coefficientCount(grid: Grid): number {
	return grid.columns * grid.rows * MARKED_FREQUENCIES.length;
}

/** The marked coefficients of the grid's samples, in the order coefficientCount describes. */
export function readCoefficients(samples: Float32Array, grid: Grid): Float32Array {
	const coefficients = new Float32Array(coefficientCount(grid));
	const block = new Float32Array(SAMPLES_PER_BLOCK);
	let out = 0;
	for (let by = 0; by < grid.rows; by++) {
		for (let bx = 0; bx < grid.columns; bx++) {
			for (let y = 0; y < BLOCK_SIZE; y++) {
				const start = (by * BLOCK_SIZE + y) * grid.width + bx * BLOCK_SIZE;
				block.set(samples.subarray(start, start + BLOCK_SIZE), y * BLOCK_SIZE);
			}
			for (const basis of BASES) {
				let sum = 0;
				for (let i = 0; i < SAMPLES_PER_BLOCK; i++) sum += basis[i]! * block[i]!;
				coefficients[out++] = sum;
			}
		}
	}
	return coefficients;
}

/** Grid samples whose marked coefficients are `changes` and whose others are zero (the inverse transform). */
export function samplesOfCoefficients(changes: Float32Array, grid: Grid): Float32Array {
	const samples = new Float32Array(grid.width * grid.height);
	const block = new Float32Array(SAMPLES_PER_BLOCK);
	let index = 0;
	for (let by = 0; by < grid.rows; by++) {
		for (let bx = 0; bx < grid.columns; bx++) {
			block.fill(0);
			for (const basis of BASES) {
				const amount = changes[index++]!;
				if (amount === 0) continue;
				for (let i = 0; i < SAMPLES_PER_BLOCK; i++) block[i]! += amount * basis[i]!;
			}
			for (let y = 0; y < BLOCK_SIZE; y++) samples.set(block.subarray(y * BLOCK_SIZE, (y + 1) * BLOCK_SIZE), (by * BLOCK_SIZE + y) * grid.width + bx * BLOCK_SIZE);
		}
	}
	return samples;
}
