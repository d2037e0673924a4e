/**
 * The coefficients the mark is written in: on each 8 × 8 block of the grid, twelve of the
 * orthonormal 2-D DCT-II's low-middle frequencies (u + v from 2 to 4). Lower ones carry most of
 * a picture's own energy, which the mark would have to outweigh; higher ones are what JPEG and
 * WebP quantize away and resizing blurs. On a 1024 px image one block is 32 px across, so these
 * are slow waves even after the image is halved and compressed.
 *
 * Each 2-D basis is a cosine across times a cosine down, so both directions are computed as 1-D
 * transforms, along the rows and then down the columns, and only the 1-D frequencies 0 to 4 the
 * marked ones use: far fewer products than weighing all 64 samples by each of twelve bases.
 */
import { BLOCK_SIZE, type Grid } from './canonical-grid';

/** [u, v]: u cycles across, v down, in half-periods per block; the order coefficients are read in. */
export const MARKED_FREQUENCIES: readonly (readonly [number, number])[] = [
	[2, 0], [1, 1], [0, 2],
	[3, 0], [2, 1], [1, 2], [0, 3],
	[4, 0], [3, 1], [2, 2], [1, 3], [0, 4],
];

/** 1-D frequencies 0 to 4: every one a marked frequency uses across or down. */
const FREQUENCIES_1D = 5;
const ACROSS = Int32Array.from(MARKED_FREQUENCIES, ([u]) => u);
const DOWN = Int32Array.from(MARKED_FREQUENCIES, ([, v]) => v);

/** The orthonormal 1-D DCT-II's basis: frequency k's weight of sample x at [k × BLOCK_SIZE + x]. */
const COSINES = new Float64Array(FREQUENCIES_1D * BLOCK_SIZE);
for (let k = 0; k < FREQUENCIES_1D; k++) {
	const scale = Math.sqrt((k === 0 ? 1 : 2) / BLOCK_SIZE);
	for (let x = 0; x < BLOCK_SIZE; x++) COSINES[k * BLOCK_SIZE + x] = scale * Math.cos(((2 * x + 1) * k * Math.PI) / (2 * BLOCK_SIZE));
}

/** Frequency k's weights of samples 0 to 3: the rest mirror them (see rowFrequencies). */
function firstHalf(k: number): [number, number, number, number] {
	const at = k * BLOCK_SIZE;
	return [COSINES[at]!, COSINES[at + 1]!, COSINES[at + 2]!, COSINES[at + 3]!];
}
const [F0] = firstHalf(0);
const [F1A, F1B, F1C, F1D] = firstHalf(1);
const [F2A, F2B] = firstHalf(2);
const [F3A, F3B, F3C, F3D] = firstHalf(3);
const [F4] = firstHalf(4);

/** Coefficients on the grid: blocks left to right, top to bottom, each block's MARKED_FREQUENCIES in order. */
export function coefficientCount(grid: Grid): number {
	return grid.columns * grid.rows * MARKED_FREQUENCIES.length;
}

/** The marked coefficients of the grid's samples, in the order coefficientCount describes. */
export function readCoefficients(samples: Float32Array, grid: Grid): Float32Array {
	const coefficients = new Float32Array(coefficientCount(grid));
	// The block's rows transformed across: frequency u of row y at [y × FREQUENCIES_1D + u].
	const rows = new Float64Array(BLOCK_SIZE * FREQUENCIES_1D);
	let out = 0;
	for (let by = 0; by < grid.rows; by++) {
		for (let bx = 0; bx < grid.columns; bx++) {
			for (let y = 0; y < BLOCK_SIZE; y++) {
				rowFrequencies(samples, (by * BLOCK_SIZE + y) * grid.width + bx * BLOCK_SIZE, rows, y * FREQUENCIES_1D);
			}
			for (let f = 0; f < ACROSS.length; f++) {
				const u = ACROSS[f]!;
				const down = DOWN[f]! * BLOCK_SIZE;
				let sum = 0;
				for (let y = 0; y < BLOCK_SIZE; y++) sum += COSINES[down + y]! * rows[y * FREQUENCIES_1D + u]!;
				coefficients[out++] = sum;
			}
		}
	}
	return coefficients;
}

/**
 * The 1-D frequencies 0 to 4 of the 8 samples from `start`, written from `at`. A cosine of even
 * frequency takes the same value at x and at 7 − x, one of odd frequency the opposite value, so
 * each such pair of samples is added (for even) or subtracted (for odd) once and then weighed once;
 * frequency 2's weights are also ±(F2A, F2B) and frequency 4's all ±F4. Written out sample by
 * sample: loops this short cost more in counting than in arithmetic.
 */
function rowFrequencies(samples: Float32Array, start: number, rows: Float64Array, at: number): void {
	const s0 = samples[start]!, s1 = samples[start + 1]!, s2 = samples[start + 2]!, s3 = samples[start + 3]!;
	const s4 = samples[start + 4]!, s5 = samples[start + 5]!, s6 = samples[start + 6]!, s7 = samples[start + 7]!;
	const sum0 = s0 + s7, sum1 = s1 + s6, sum2 = s2 + s5, sum3 = s3 + s4;
	const difference0 = s0 - s7, difference1 = s1 - s6, difference2 = s2 - s5, difference3 = s3 - s4;
	rows[at] = F0 * (sum0 + sum1 + sum2 + sum3);
	rows[at + 1] = F1A * difference0 + F1B * difference1 + F1C * difference2 + F1D * difference3;
	rows[at + 2] = F2A * (sum0 - sum3) + F2B * (sum1 - sum2);
	rows[at + 3] = F3A * difference0 + F3B * difference1 + F3C * difference2 + F3D * difference3;
	rows[at + 4] = F4 * (sum0 - sum1 - sum2 + sum3);
}

/** Grid samples whose marked coefficients are `changes` and whose others are zero (the inverse transform). */
export function samplesOfCoefficients(changes: Float32Array, grid: Grid): Float32Array {
	const samples = new Float32Array(grid.width * grid.height);
	// The block's coefficients of each frequency down v, transformed back across: at [v × BLOCK_SIZE + x].
	const profiles = new Float64Array(FREQUENCIES_1D * BLOCK_SIZE);
	for (let by = 0, index = 0; by < grid.rows; by++) {
		for (let bx = 0; bx < grid.columns; bx++, index += ACROSS.length) {
			rowProfiles(changes, index, profiles);
			for (let y = 0; y < BLOCK_SIZE / 2; y++) {
				const left = bx * BLOCK_SIZE;
				mirroredRows(profiles, y, samples, (by * BLOCK_SIZE + y) * grid.width + left, (by * BLOCK_SIZE + BLOCK_SIZE - 1 - y) * grid.width + left);
			}
		}
	}
	return samples;
}

/** Each frequency down's profile across the block, from the block's coefficients at `index` on. */
function rowProfiles(changes: Float32Array, index: number, profiles: Float64Array): void {
	profiles.fill(0);
	for (let f = 0; f < ACROSS.length; f++) {
		const amount = changes[index + f]!;
		if (amount === 0) continue;
		const across = ACROSS[f]! * BLOCK_SIZE;
		const profile = DOWN[f]! * BLOCK_SIZE;
		for (let x = 0; x < BLOCK_SIZE; x++) profiles[profile + x]! += amount * COSINES[across + x]!;
	}
}

/**
 * Block rows y and 7 − y: each sample the profiles weighed by their cosines down. Those of even
 * frequency weigh both rows alike, those of odd frequency oppositely, so each part is summed once
 * for the two rows.
 */
function mirroredRows(profiles: Float64Array, y: number, samples: Float32Array, top: number, bottom: number): void {
	const down0 = COSINES[y]!, down1 = COSINES[BLOCK_SIZE + y]!, down2 = COSINES[2 * BLOCK_SIZE + y]!;
	const down3 = COSINES[3 * BLOCK_SIZE + y]!, down4 = COSINES[4 * BLOCK_SIZE + y]!;
	for (let x = 0; x < BLOCK_SIZE; x++) {
		const even = down0 * profiles[x]! + down2 * profiles[2 * BLOCK_SIZE + x]! + down4 * profiles[4 * BLOCK_SIZE + x]!;
		const odd = down1 * profiles[BLOCK_SIZE + x]! + down3 * profiles[3 * BLOCK_SIZE + x]!;
		samples[top + x] = even + odd;
		samples[bottom + x] = even - odd;
	}
}
