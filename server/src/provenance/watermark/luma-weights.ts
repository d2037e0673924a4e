/**
 * The luma the mark is read from and written to, as integers: 8-bit samples weighed in 256ths, so
 * sums over many pixels stay exact. The loops over every pixel's luma are here, beside the weights:
 * compiled to CommonJS, another module's import is a property read at each use, and in that loop
 * the weights are read once per sample.
 */

/**
 * Luma as ITU-R BT.601 weighs the channels, in 256ths: (77 R + 150 G + 29 B) / 256. The weights
 * add up to 256, so adding the same amount to R, G and B changes luma by exactly that amount.
 */
const LUMA_RED = 77;
const LUMA_GREEN = 150;
const LUMA_BLUE = 29;
export const LUMA_SCALE = 256;

/** LUMA_SCALE-fold luma of the pixel at `p`, colour or grey. */
export function scaledLuma(data: Uint8Array, p: number, coloured: boolean): number {
	return coloured ? LUMA_RED * data[p]! + LUMA_GREEN * data[p + 1]! + LUMA_BLUE * data[p + 2]! : LUMA_SCALE * data[p]!;
}

/** The sum of LUMA_SCALE-fold luma over the pixels whose samples start from `from` up to `to` (not included). */
export function scaledLumaSum(pixels: Uint8Array, from: number, to: number, channels: number): number {
	let sum = 0;
	if (channels >= 3) {
		for (let p = from; p < to; p += channels) sum += LUMA_RED * pixels[p]! + LUMA_GREEN * pixels[p + 1]! + LUMA_BLUE * pixels[p + 2]!;
		return sum;
	}
	for (let p = from; p < to; p += channels) sum += pixels[p]!;
	return LUMA_SCALE * sum;
}

/**
 * Adds to each cell's sum the LUMA_SCALE-fold luma of its `across` pixels in the row whose samples
 * start at `start`: whole-cell-luma.ts's loop, one pass for every pixel of the image.
 */
export function addWholeCellLumas(pixels: Uint8Array, start: number, channels: number, across: number, sums: Float64Array): void {
	let p = start;
	if (channels >= 3) {
		for (let cell = 0; cell < sums.length; cell++) {
			let sum = 0;
			for (let i = 0; i < across; i++, p += channels) sum += LUMA_RED * pixels[p]! + LUMA_GREEN * pixels[p + 1]! + LUMA_BLUE * pixels[p + 2]!;
			sums[cell]! += sum;
		}
		return;
	}
	for (let cell = 0; cell < sums.length; cell++) {
		let sum = 0;
		for (let i = 0; i < across; i++, p += channels) sum += pixels[p]!;
		sums[cell]! += LUMA_SCALE * sum;
	}
}
