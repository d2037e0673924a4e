/**
 * The fixed-size grid the mark lives on. Every image, whatever its size, is seen at the same
 * number of blocks along its long side, so an image resized as a whole (half, 768 px, any size
 * down to the grid's own) is seen as the same grid: the mark needs no search for its scale. The
 * short side gets the number of blocks nearest to the image's proportions; where that rounding is
 * close to a tie, a resized copy may round the other way, and detection tries both.
 */
export const BLOCK_SIZE = 8;
/** Blocks along the long side: the grid's long side is 256 samples, at most half of a 1024 px image resized to half. */
export const LONG_SIDE_BLOCKS = 32;
/** Fewer blocks than this along the short side (proportions beyond 8:1) hold too few coefficients per code bit. */
export const MIN_SHORT_SIDE_BLOCKS = 4;
/** How close to a tie (in blocks) the short side's rounding must be for detection to try the other way too. */
const TIE_MARGIN_BLOCKS = 0.2;

export interface Grid {
	/** Blocks across and down. */
	columns: number;
	rows: number;
	/** Samples across and down: blocks × BLOCK_SIZE. */
	width: number;
	height: number;
}

function gridOf(columns: number, rows: number): Grid {
	return { columns, rows, width: columns * BLOCK_SIZE, height: rows * BLOCK_SIZE };
}

function shortSideBlocks(width: number, height: number): number {
	return (LONG_SIDE_BLOCKS * Math.min(width, height)) / Math.max(width, height);
}

function oriented(width: number, height: number, shortBlocks: number): Grid {
	return width >= height ? gridOf(LONG_SIDE_BLOCKS, shortBlocks) : gridOf(shortBlocks, LONG_SIDE_BLOCKS);
}

/** The grid is never finer than the image: each grid sample averages at least one pixel. */
function fits(grid: Grid, width: number, height: number): boolean {
	return grid.width <= width && grid.height <= height;
}

/** Whether an image of this size can carry the mark: gridForEmbedding has a grid for it. */
export function canCarryWatermark(width: number, height: number): boolean {
	const grid = oriented(width, height, Math.round(shortSideBlocks(width, height)));
	return Math.min(grid.columns, grid.rows) >= MIN_SHORT_SIDE_BLOCKS && fits(grid, width, height);
}

/** The grid an image of this size is marked on; a RangeError when it is too small or too narrow to carry the mark. */
export function gridForEmbedding(width: number, height: number, field = 'pixels'): Grid {
	const grid = oriented(width, height, Math.round(shortSideBlocks(width, height)));
	if (Math.min(grid.columns, grid.rows) < MIN_SHORT_SIDE_BLOCKS) {
		throw new RangeError(`${field}: a ${width} × ${height} image is too narrow to carry a watermark (at most 8:1)`);
	}
	if (!fits(grid, width, height)) {
		throw new RangeError(
			`${field}: a ${width} × ${height} image is too small to carry a watermark (at least ${grid.width} × ${grid.height} px at these proportions)`,
		);
	}
	return grid;
}

/** The grids a possibly resized image may have been marked on, likeliest first; none for an image too small or too narrow. */
export function gridsForDetection(width: number, height: number): Grid[] {
	const exact = shortSideBlocks(width, height);
	const nearest = Math.round(exact);
	const blockCounts = [nearest];
	if (Math.abs(exact - Math.floor(exact) - 0.5) < TIE_MARGIN_BLOCKS) blockCounts.push(nearest > exact ? nearest - 1 : nearest + 1);
	return blockCounts
		.filter((blocks) => blocks >= MIN_SHORT_SIDE_BLOCKS)
		.map((blocks) => oriented(width, height, blocks))
		.filter((grid) => fits(grid, width, height));
}
