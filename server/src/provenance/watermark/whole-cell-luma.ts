/**
 * The image's luma averaged down onto a grid whose every sample covers a whole number of pixels
 * across and down, as at most catalog sizes (1024 px on a 256-sample side: 4 × 4 pixels). No
 * pixel is shared between two samples, so every sum is of whole pixels, in integers, with no part
 * of a pixel to weigh, and each sample is divided once, by its pixel count.
 */
import type { Grid } from './canonical-grid';
import { addWholeCellLumas, LUMA_SCALE } from './luma-weights';
import type { RawImage } from './raw-image';

/** Whether every sample of `grid` covers a whole number of the image's pixels across and down. */
export function coversWholePixels(info: RawImage['info'], grid: Grid): boolean {
	return info.width % grid.width === 0 && info.height % grid.height === 0;
}

/** lumaOnGrid (grid-sampling.ts) for a grid that coversWholePixels of the image, read from `pixels`. */
export function lumaOnWholeCells(pixels: Uint8Array, info: RawImage['info'], grid: Grid): Float32Array {
	const { width, channels } = info;
	const across = width / grid.width;
	const down = info.height / grid.height;
	const scaledPixelsPerCell = LUMA_SCALE * across * down;
	const samples = new Float32Array(grid.width * grid.height);
	const sums = new Float64Array(grid.width);
	for (let cellRow = 0; cellRow < grid.height; cellRow++) {
		sums.fill(0);
		for (let y = cellRow * down; y < (cellRow + 1) * down; y++) addWholeCellLumas(pixels, y * width * channels, channels, across, sums);
		for (let x = 0, q = cellRow * grid.width; x < grid.width; x++, q++) samples[q] = sums[x]! / scaledPixelsPerCell;
	}
	return samples;
}
