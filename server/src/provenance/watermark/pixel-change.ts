/**
 * A change spread over the grid, added to one row of pixels: each pixel's change interpolated
 * between the grid rows above and below it (already interpolated across), rounded to whole levels
 * and added to its colour samples, held within 0–255. These loops run once for every pixel of
 * every marked image.
 */

/**
 * Adds to R, G and B of each pixel in the row that starts at `start` its change, `lower` of the way
 * from the grid row above to the one below, rounded; held within 0–255. The bounds are tested by
 * hand: storing through a Uint8ClampedArray clamps too, but costs more.
 */
export function addToColours(pixels: Uint8Array, start: number, channels: number, above: Float32Array, below: Float32Array, lower: number): void {
	for (let x = 0, p = start; x < above.length; x++, p += channels) {
		const amount = roundedBetween(above[x]!, below[x]!, lower);
		pixels[p] = clampToByte(pixels[p]! + amount);
		pixels[p + 1] = clampToByte(pixels[p + 1]! + amount);
		pixels[p + 2] = clampToByte(pixels[p + 2]! + amount);
	}
}

/** addToColours for grey, with or without alpha: the first sample of each pixel is its only colour. */
export function addToGrey(pixels: Uint8Array, start: number, channels: number, above: Float32Array, below: Float32Array, lower: number): void {
	for (let x = 0, p = start; x < above.length; x++, p += channels) pixels[p] = clampToByte(pixels[p]! + roundedBetween(above[x]!, below[x]!, lower));
}

/**
 * `lower` of the way from `above` to `below`, rounded to the nearest whole level, halves up: what
 * Math.round gives. Math.round's own test for a half compiles to a branch, which the fraction,
 * different at every pixel, keeps mispredicting; the floor and a comparison counted as 0 or 1
 * give the same without one. Nothing here is looked up on the global object: inside a `vm`
 * context (Jest runs every suite in one) each such lookup at every pixel is a call of its own,
 * and the floor is taken from an integer truncation, exact for changes far within ±2³¹ levels.
 */
function roundedBetween(above: number, below: number, lower: number): number {
	const value = above + lower * (below - above);
	const truncated = value | 0;
	const floor = truncated - +(truncated > value);
	return floor + +(value - floor >= 0.5);
}

function clampToByte(value: number): number {
	return value < 0 ? 0 : value > 255 ? 255 : value;
}
