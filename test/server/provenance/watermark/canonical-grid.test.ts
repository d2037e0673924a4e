/**
 * The grid the mark lives on is the same for an image and for its copies resized as a whole, at
 * every catalog proportion; a proportion that rounds near a tie is tried both ways.
 */
import { dimensionsFor, EXTENDED_ASPECT_RATIOS } from '../../../../core/models';
import { gridForEmbedding, gridsForDetection } from '../../../../server/src/provenance/watermark/canonical-grid';

it.each(EXTENDED_ASPECT_RATIOS)('%s: 32 blocks on the long side; the same grid at half size and at 768 px', (aspectRatio) => {
	const { width, height } = dimensionsFor(aspectRatio);
	const grid = gridForEmbedding(width, height);
	expect(Math.max(grid.columns, grid.rows)).toBe(32);
	expect(grid.width).toBe(grid.columns * 8);
	const scale = (factor: number) => [Math.round(width * factor), Math.round(height * factor)] as const;
	for (const [w, h] of [[width, height], scale(0.5), scale(768 / 1024)] as const) expect(gridsForDetection(w, h)[0]).toEqual(grid);
});

it('near a tie, detection tries the other rounding second', () => {
	// 32 × 320 / 1024 = 10: not near a tie; 32 × 336 / 1024 = 10.5: a tie.
	expect(gridsForDetection(1024, 320).map((grid) => grid.rows)).toEqual([10]);
	expect(gridsForDetection(1024, 336).map((grid) => grid.rows)).toEqual([11, 10]);
	expect(gridsForDetection(1024, 340).map((grid) => grid.rows)).toEqual([11, 10]);
});

it('no grid finer than the image, and none for proportions beyond 8:1', () => {
	expect(gridsForDetection(255, 255)).toEqual([]);
	expect(gridsForDetection(256, 256)).toHaveLength(1);
	expect(gridsForDetection(4096, 400)).toEqual([]);
});
