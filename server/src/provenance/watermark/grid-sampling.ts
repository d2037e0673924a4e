/**
 * Between the image and its grid: the image's luma averaged down onto the grid, and a change made
 * on the grid spread back over the image's pixels. Area averaging down and bilinear interpolation
 * up are both linear and have no edge effects of their own, so a copy resized as a whole averages
 * down to nearly the same grid, and the smooth change they add has no seams at the pixel level.
 */
import type { Grid } from './canonical-grid';
import { LUMA_SCALE, scaledLuma, scaledLumaSum } from './luma-weights';
import { addToColours, addToGrey } from './pixel-change';
import { colourChannels, type RawImage } from './raw-image';
import { coversWholePixels, lumaOnWholeCells } from './whole-cell-luma';

/** How each of `source` samples shares out over `target` ≥ 1 cells: its first cell and the part that falls in it. */
interface AreaShares {
	first: Int32Array;
	part: Float32Array;
	/** A source sample's whole weight: target / source. */
	whole: number;
}

function areaShares(source: number, target: number): AreaShares {
	const whole = target / source;
	const first = new Int32Array(source);
	const part = new Float32Array(source);
	for (let x = 0; x < source; x++) {
		const start = x * whole;
		const cell = Math.min(target - 1, Math.floor(start));
		first[x] = cell;
		part[x] = Math.min((x + 1) * whole, cell + 1) - start;
	}
	return { first, part, whole };
}

/**
 * The pixels each of `target` cells covers along a row of `source`: whole pixels from `from` to
 * `to` (not included), and the parts of the pixels just outside them that fall in the cell.
 */
interface CellSpans {
	from: Int32Array;
	to: Int32Array;
	before: Float32Array;
	after: Float32Array;
}

function cellSpans(source: number, target: number): CellSpans {
	const scale = source / target;
	const spans = { from: new Int32Array(target), to: new Int32Array(target), before: new Float32Array(target), after: new Float32Array(target) };
	for (let cell = 0; cell < target; cell++) {
		const start = cell * scale;
		const end = Math.min(source, (cell + 1) * scale);
		spans.from[cell] = Math.ceil(start);
		spans.to[cell] = Math.max(spans.from[cell]!, Math.floor(end));
		spans.before[cell] = spans.from[cell]! - start;
		spans.after[cell] = spans.to[cell]! < source ? end - spans.to[cell]! : 0;
	}
	return spans;
}

/**
 * The image's luma, each grid sample the mean of the pixels it covers (fractions of a pixel
 * included). A grid whose samples each cover whole pixels is summed in whole-cell-luma.ts, with no
 * fractions to weigh.
 */
export function lumaOnGrid(image: RawImage, grid: Grid): Float32Array {
	const pixels = plainView(image.data);
	if (coversWholePixels(image.info, grid)) return lumaOnWholeCells(pixels, image.info, grid);
	return lumaOnFractionalCells(pixels, image.info, grid);
}

/**
 * The image's samples as a plain Uint8Array: the compiler keeps a loop fast for the one kind of
 * array it has met, and Buffer (what sharp answers) and Uint8Array are two kinds to it.
 */
function plainView(data: Uint8Array): Uint8Array {
	return new Uint8Array(data.buffer, data.byteOffset, data.length);
}

/**
 * lumaOnGrid at any scale. Row by row: the sum of each cell's pixels along the row, then the
 * row's share of one or two grid rows.
 */
function lumaOnFractionalCells(pixels: Uint8Array, info: RawImage['info'], grid: Grid): Float32Array {
	const { width, height, channels } = info;
	const spans = cellSpans(width, grid.width);
	const down = areaShares(height, grid.height);
	// Each cell's sum of LUMA_SCALE-fold luma over whole pixels; the mean is that over the cell's width.
	const perCell = 1 / (LUMA_SCALE * (width / grid.width));
	const samples = new Float32Array(grid.width * grid.height);
	const row = new Float64Array(grid.width);
	for (let y = 0; y < height; y++) {
		rowSums(pixels, y * width * channels, channels, spans, row);
		const cellRow = down.first[y]!;
		addRow(samples, grid.width, cellRow, down.part[y]! * perCell, row);
		if (cellRow + 1 < grid.height) addRow(samples, grid.width, cellRow + 1, (down.whole - down.part[y]!) * perCell, row);
	}
	return samples;
}

function rowSums(data: Uint8Array, start: number, channels: number, spans: CellSpans, row: Float64Array): void {
	const coloured = channels >= 3;
	for (let cell = 0; cell < row.length; cell++) {
		const from = spans.from[cell]!;
		const to = spans.to[cell]!;
		let sum = scaledLumaSum(data, start + from * channels, start + to * channels, channels);
		if (spans.before[cell]! > 0) sum += spans.before[cell]! * scaledLuma(data, start + (from - 1) * channels, coloured);
		if (spans.after[cell]! > 0) sum += spans.after[cell]! * scaledLuma(data, start + to * channels, coloured);
		row[cell] = sum;
	}
}

function addRow(samples: Float32Array, width: number, rowIndex: number, weight: number, row: Float64Array): void {
	if (weight <= 0) return;
	for (let x = 0, q = rowIndex * width; x < width; x++, q++) samples[q]! += weight * row[x]!;
}

/** For each of `target` pixels, the two grid samples around its centre and the weight of the second. */
interface Interpolation {
	before: Int32Array;
	after: Int32Array;
	weight: Float32Array;
}

function interpolation(target: number, source: number): Interpolation {
	const before = new Int32Array(target);
	const after = new Int32Array(target);
	const weight = new Float32Array(target);
	for (let x = 0; x < target; x++) {
		const at = Math.min(source - 1, Math.max(0, ((x + 0.5) * source) / target - 0.5));
		before[x] = Math.floor(at);
		after[x] = Math.min(source - 1, before[x]! + 1);
		weight[x] = at - before[x]!;
	}
	return { before, after, weight };
}

/**
 * Adds `change` (one value per grid sample, in luma levels), interpolated to each pixel, to each
 * colour channel of the image, in place: rounded and held within 0–255; alpha is left as it is.
 * The pixels are whole numbers, so adding the rounded change rounds the sum the same way.
 */
export function addFromGrid(image: RawImage, grid: Grid, change: Float32Array): void {
	const { width, height, channels } = image.info;
	const pixels = plainView(image.data);
	const across = interpolation(width, grid.width);
	const down = interpolation(height, grid.height);
	// The grid rows above and below the current pixel row, each already interpolated across to
	// every pixel: each grid row is spread across once, not once for every pixel row it touches.
	const spread = { above: new Float32Array(width), below: new Float32Array(width), aboveRow: -1, belowRow: -1 };
	const addToRow = colourChannels(channels) === 3 ? addToColours : addToGrey;
	for (let y = 0; y < height; y++) {
		spreadRows(spread, down.before[y]!, down.after[y]!, grid, change, across);
		addToRow(pixels, y * width * channels, channels, spread.above, spread.below, down.weight[y]!);
	}
}

interface SpreadRows {
	above: Float32Array;
	below: Float32Array;
	aboveRow: number;
	belowRow: number;
}

/** Makes `spread` hold grid rows `aboveRow` and `belowRow` interpolated across, reusing what it already holds. */
function spreadRows(spread: SpreadRows, aboveRow: number, belowRow: number, grid: Grid, change: Float32Array, across: Interpolation): void {
	if (spread.aboveRow === aboveRow && spread.belowRow === belowRow) return;
	if (spread.belowRow === aboveRow) {
		[spread.above, spread.below] = [spread.below, spread.above];
		spread.aboveRow = aboveRow;
	}
	if (spread.aboveRow !== aboveRow) spreadRow(change, aboveRow * grid.width, across, spread.above);
	spread.aboveRow = aboveRow;
	if (belowRow === aboveRow) spread.below.set(spread.above);
	else spreadRow(change, belowRow * grid.width, across, spread.below);
	spread.belowRow = belowRow;
}

function spreadRow(change: Float32Array, start: number, across: Interpolation, out: Float32Array): void {
	const { before, after, weight } = across;
	for (let x = 0; x < out.length; x++) {
		const left = change[start + before[x]!]!;
		out[x] = left + weight[x]! * (change[start + after[x]!]! - left);
	}
}
