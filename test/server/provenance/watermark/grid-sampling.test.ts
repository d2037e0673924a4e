/**
 * Between pixels and grid: averaging down keeps the mean of the pixels a sample covers, at whole
 * and fractional scales, and a change spread back up is added to every colour channel alike,
 * rounded and held within 0–255.
 */
import { gridForEmbedding, type Grid } from '../../../../server/src/provenance/watermark/canonical-grid';
import { addFromGrid, lumaOnGrid } from '../../../../server/src/provenance/watermark/grid-sampling';
import type { RawImage } from '../../../../server/src/provenance/watermark/raw-image';

function image(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): RawImage {
	const data = Buffer.alloc(width * height * 3);
	for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(pixel(x, y), 3 * (y * width + x));
	return { data, info: { width, height, channels: 3 } };
}

it.each([
	[1024, 1024],
	[1024, 680],
	[1000, 333],
	[257, 256],
])('%i × %i: a flat picture averages to its luma, (77 R + 150 G + 29 B) / 256, everywhere', (width, height) => {
	const grid = gridForEmbedding(width, height);
	const samples = lumaOnGrid(image(width, height, () => [200, 100, 50]), grid);
	const luma = (77 * 200 + 150 * 100 + 29 * 50) / 256;
	// One assertion over every sample: tens of thousands of `expect` calls would be most of the suite's time.
	const furthest = samples.reduce((worst, value) => Math.max(worst, Math.abs(value - luma)), 0);
	expect(furthest).toBeLessThan(0.0005);
});

it('a ramp across the image averages to the ramp at each cell centre (area averaging at a fractional scale)', () => {
	const [width, height] = [1000, 400];
	const grid = gridForEmbedding(width, height);
	const samples = lumaOnGrid(image(width, height, (x) => [x / 4, x / 4, x / 4]), grid);
	// Each grid column covers 1000 / 256 pixels; its mean is the ramp at the middle of what it covers.
	for (let column = 0; column < grid.width; column++) {
		const middle = (column + 0.5) * (width / grid.width) - 0.5;
		expect(samples[grid.width * 5 + column]).toBeCloseTo(middle / 4, 0);
	}
});

it('a change of +3 everywhere adds 3 to R, G and B, clipped at 255; −300 leaves 0', () => {
	const grid: Grid = gridForEmbedding(512, 512);
	const picture = image(512, 512, (x) => [x % 256, 254, 10]);
	addFromGrid(picture, grid, new Float32Array(grid.width * grid.height).fill(3));
	expect(Array.from(picture.data.subarray(0, 6))).toEqual([3, 255, 13, 4, 255, 13]);
	addFromGrid(picture, grid, new Float32Array(grid.width * grid.height).fill(-300));
	expect(picture.data.every((value) => value === 0)).toBe(true);
});
