/**
 * The grid's computations give what the plain formulas give, written out here as directly as they
 * read: each pixel's luma averaged over the exact area each grid sample covers, each block's 2-D
 * DCT-II summed over its 64 samples (and its inverse over the 12 marked frequencies), and bilinear
 * interpolation at every pixel, rounded, added to each colour sample and held within 0–255. At sizes
 * whose grid samples cover whole pixels (1024 × 1024, 1024 × 768) and at sizes where they cover
 * parts of pixels (768 × 1344, 1001 × 667); grey, grey and alpha, RGB and RGBA each at one size of
 * either kind.
 */
import { MARKED_FREQUENCIES, readCoefficients, samplesOfCoefficients } from '../../../../server/src/provenance/watermark/block-coefficients';
import { BLOCK_SIZE, gridForEmbedding, type Grid } from '../../../../server/src/provenance/watermark/canonical-grid';
import { addFromGrid, lumaOnGrid } from '../../../../server/src/provenance/watermark/grid-sampling';
import type { RawImage } from '../../../../server/src/provenance/watermark/raw-image';
import { xorshift32 } from '../../../../server/src/provenance/watermark/spreading';

/** [width, height, channels, whether each grid sample covers whole pixels]. */
const CASES = [
	[1024, 1024, 3, true],
	[1024, 1024, 2, true],
	[1024, 768, 4, true],
	[1024, 768, 1, true],
	[768, 1344, 3, false],
	[768, 1344, 1, false],
	[1001, 667, 4, false],
	[1001, 667, 2, false],
] as const;

// Under jest every global is looked up through the test's sandbox, a cost in loops over a million
// pixels: Math's functions are taken once.
const { abs, ceil, cos, floor, max, min, round, sin, sqrt, PI } = Math;

/** The mark's own xorshift32, scaled to [0, 1): the same pictures and changes on every run. */
function random(seed: number): () => number {
	const next = xorshift32(seed >>> 0 || 1);
	return () => next() / 2 ** 32;
}

/** Waves, noise and patches of black and of white (where adding clips), alpha noise; a Buffer or a plain Uint8Array in turn. */
function picture(width: number, height: number, channels: number): RawImage {
	const next = random(width * 7919 + height * 31 + channels);
	const data = channels % 2 === 0 ? Buffer.alloc(width * height * channels) : new Uint8Array(width * height * channels);
	const colours = channels >= 3 ? 3 : 1;
	const across = Array.from({ length: width }, (_, x) => sin(x / 37));
	for (let y = 0; y < height; y++) {
		const down = cos(y / 53);
		for (let x = 0; x < width; x++) {
			const patch = ((x >> 6) + 2 * (y >> 6)) % 7;
			const base = patch === 0 ? 2 : patch === 1 ? 253 : 128 + 90 * across[x]! * down;
			const p = (y * width + x) * channels;
			for (let c = 0; c < colours; c++) data[p + c] = min(255, max(0, round(base + 12 * c + 30 * (next() - 0.5))));
			if (channels % 2 === 0) data[p + channels - 1] = floor(256 * next());
		}
	}
	return { data, info: { width, height, channels } };
}

/** For each of `cells` equal cells along `pixels` pixels: the pixels it overlaps and by how much of a pixel. */
function overlaps(pixels: number, cells: number): { pixel: number; share: number }[][] {
	const size = pixels / cells;
	return Array.from({ length: cells }, (_, cell) => {
		const [start, end] = [cell * size, (cell + 1) * size];
		const covered = [];
		for (let pixel = floor(start); pixel < min(pixels, ceil(end)); pixel++) {
			const share = min(end, pixel + 1) - max(start, pixel);
			if (share > 0) covered.push({ pixel, share });
		}
		return covered;
	});
}

function referenceLumaOnGrid({ data, info: { width, height, channels } }: RawImage, grid: Grid): Float64Array {
	const lumas = Float64Array.from({ length: width * height }, (_, pixel) => {
		const p = pixel * channels;
		return channels >= 3 ? (77 * data[p]! + 150 * data[p + 1]! + 29 * data[p + 2]!) / 256 : data[p]!;
	});
	const [across, down] = [overlaps(width, grid.width), overlaps(height, grid.height)];
	const area = (width / grid.width) * (height / grid.height);
	const samples = new Float64Array(grid.width * grid.height);
	for (let row = 0; row < grid.height; row++) {
		for (let column = 0; column < grid.width; column++) {
			let sum = 0;
			for (const { pixel: y, share: downShare } of down[row]!) for (const { pixel: x, share } of across[column]!) sum += downShare * share * lumas[y * width + x]!;
			samples[row * grid.width + column] = sum / area;
		}
	}
	return samples;
}

/** The orthonormal 2-D DCT-II's basis for frequency [u, v] at sample (x, y) of a block. */
function basis(u: number, v: number, x: number, y: number): number {
	const scale = (k: number) => sqrt((k === 0 ? 1 : 2) / BLOCK_SIZE);
	return scale(u) * scale(v) * cos(((2 * x + 1) * u * PI) / (2 * BLOCK_SIZE)) * cos(((2 * y + 1) * v * PI) / (2 * BLOCK_SIZE));
}

/** Calls `visit` with each marked coefficient's index and each sample of its block: blocks left to right, top to bottom. */
function eachBlockSample(grid: Grid, visit: (coefficient: number, sample: number, weight: number) => void): void {
	for (let by = 0, index = 0; by < grid.rows; by++) {
		for (let bx = 0; bx < grid.columns; bx++) {
			for (const [u, v] of MARKED_FREQUENCIES) {
				for (let y = 0; y < BLOCK_SIZE; y++) {
					for (let x = 0; x < BLOCK_SIZE; x++) visit(index, (by * BLOCK_SIZE + y) * grid.width + bx * BLOCK_SIZE + x, basis(u, v, x, y));
				}
				index++;
			}
		}
	}
}

function referenceCoefficients(samples: ArrayLike<number>, grid: Grid): Float64Array {
	const coefficients = new Float64Array(grid.columns * grid.rows * MARKED_FREQUENCIES.length);
	eachBlockSample(grid, (coefficient, sample, weight) => (coefficients[coefficient]! += weight * samples[sample]!));
	return coefficients;
}

function referenceSamplesOf(changes: ArrayLike<number>, grid: Grid): Float64Array {
	const samples = new Float64Array(grid.width * grid.height);
	eachBlockSample(grid, (coefficient, sample, weight) => (samples[sample]! += weight * changes[coefficient]!));
	return samples;
}

/** Where pixel `pixel`'s centre falls among `samples` grid samples over `pixels` pixels, held to the outer samples' centres. */
function position(pixel: number, pixels: number, samples: number): { first: number; second: number; weight: number } {
	const at = min(samples - 1, max(0, ((pixel + 0.5) * samples) / pixels - 0.5));
	const first = floor(at);
	return { first, second: min(samples - 1, first + 1), weight: at - first };
}

function referenceAddFromGrid({ data, info: { width, height, channels } }: RawImage, grid: Grid, change: ArrayLike<number>): Uint8Array {
	const marked = Uint8Array.from(data);
	const colours = channels >= 3 ? 3 : 1;
	const columns = Array.from({ length: width }, (_, x) => position(x, width, grid.width));
	for (let y = 0; y < height; y++) {
		const down = position(y, height, grid.height);
		const [above, below] = [down.first * grid.width, down.second * grid.width];
		for (let x = 0; x < width; x++) {
			const across = columns[x]!;
			const top = (1 - across.weight) * change[above + across.first]! + across.weight * change[above + across.second]!;
			const bottom = (1 - across.weight) * change[below + across.first]! + across.weight * change[below + across.second]!;
			const amount = round((1 - down.weight) * top + down.weight * bottom);
			for (let c = 0, p = (y * width + x) * channels; c < colours; c++) marked[p + c] = min(255, max(0, marked[p + c]! + amount));
		}
	}
	return marked;
}

function largestDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
	expect(a.length).toBe(b.length);
	let largest = 0;
	for (let i = 0; i < a.length; i++) largest = max(largest, abs(a[i]! - b[i]!));
	return largest;
}

it.each(CASES)('%i × %i, %i channels (whole pixels per grid sample: %s): as the formulas give it', (width, height, channels, whole) => {
	const image = picture(width, height, channels);
	const grid = gridForEmbedding(width, height);
	expect(width % grid.width === 0 && height % grid.height === 0).toBe(whole);
	const luma = lumaOnGrid(image, grid);
	// Float32 holds a mean of up to 255 to within about 1e-5.
	expect(largestDifference(luma, referenceLumaOnGrid(image, grid))).toBeLessThan(1e-4);
	// Coefficients run to a few hundred levels; float32 holds them to about 1e-5 of that.
	expect(largestDifference(readCoefficients(luma, grid), referenceCoefficients(luma, grid))).toBeLessThan(1e-3);
	const next = random(width + height + channels);
	const changes = Float32Array.from({ length: grid.columns * grid.rows * MARKED_FREQUENCIES.length }, () => (next() < 0.3 ? 0 : 18 * (next() - 0.5)));
	expect(largestDifference(samplesOfCoefficients(changes, grid), referenceSamplesOf(changes, grid))).toBeLessThan(1e-4);
	// A mark's change is a few levels; some samples far larger, so sums clip at 0 and 255 in every patch.
	const change = Float32Array.from({ length: grid.width * grid.height }, () => (next() < 0.02 ? 400 : 12) * (next() - 0.5));
	const expected = referenceAddFromGrid(image, grid, change);
	const original = Uint8Array.from(image.data);
	addFromGrid(image, grid, change);
	let differing = 0;
	for (let i = 0; i < expected.length; i++) if (image.data[i] !== expected[i]) differing++;
	// The grid keeps its interpolated rows in float32: a value within about 1e-7 of a half may round the other way.
	expect(largestDifference(image.data, expected)).toBeLessThanOrEqual(1);
	expect(differing / expected.length).toBeLessThan(1e-5);
	expect(largestDifference(image.data, original)).toBeGreaterThan(100);
	if (channels % 2 === 0) for (let p = channels - 1; p < original.length; p += channels) if (image.data[p] !== original[p]) throw new Error(`alpha changed at sample ${p}`);
});

it.each([
	[1024, 1024, 3],
	[1001, 667, 2],
])('%i × %i, %i channels: a change of exactly a half rounds up, as Math.round does (+0.5 adds 1, −0.5 nothing, −1.5 takes 1)', (width, height, channels) => {
	const grid = gridForEmbedding(width, height);
	for (const half of [0.5, -0.5, -1.5, 2.5]) {
		const image = picture(width, height, channels);
		const change = new Float32Array(grid.width * grid.height).fill(half);
		const expected = referenceAddFromGrid(image, grid, change);
		addFromGrid(image, grid, change);
		expect(largestDifference(image.data, expected)).toBe(0);
	}
});
