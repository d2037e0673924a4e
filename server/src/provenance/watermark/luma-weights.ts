/**
 * The luma the mark is read from and written to, as integers: 8-bit samples weighed in 256ths, so
 * sums over many pixels stay exact.
 */

/**
 * Luma as ITU-R BT.601 weighs the channels, in 256ths: (77 R + 150 G + 29 B) / 256. The weights
 * add up to 256, so adding the same amount to R, G and B changes luma by exactly that amount.
 */
export const LUMA_RED = 77;
export const LUMA_GREEN = 150;
export const LUMA_BLUE = 29;
export const LUMA_SCALE = 256;

/** LUMA_SCALE-fold luma of the pixel at `p`, colour or grey. */
export function scaledLuma(data: Uint8Array, p: number, coloured: boolean): number {
	return coloured ? LUMA_RED * data[p]! + LUMA_GREEN * data[p + 1]! + LUMA_BLUE * data[p + 2]! : LUMA_SCALE * data[p]!;
}
