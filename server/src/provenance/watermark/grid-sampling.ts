/**
 * Between the image and its grid: the image's luma averaged down onto the grid, and a change made
 * on the grid spread back over the image's pixels. Area averaging down and bilinear interpolation
 * up are both linear and have no edge effects of their own, so a copy resized as a whole averages
 * down to nearly the same grid, and the smooth change they add has no seams at the pixel level.
 */
import type { Grid } from './canonical-grid';
import { colourChannels, type RawImage } from './raw-image';

/**
 * Luma as ITU-R BT.601 weighs the channels, in 256ths: (77 R + 150 G + 29 B) / 256. The weights
 * add up to 256, so adding the same amount to R, G and B changes luma by exactly that amount.
 */
const LUMA_RED = 77;
const LUMA_GREEN = 150;
const LUMA_BLUE = 29;
const LUMA_SCALE = 256;

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
 * included). Row by row: the sum of each cell's pixels along the row, then the row's share of one
 * or two grid rows.
 */
export function lumaOnGrid(image: RawImage, grid: Grid): Float32Array {
	const { width, height, channels } = image.info;
	const spans = cellSpans(width, grid.width);
	const down = areaShares(height, grid.height);
	// Each cell's sum of LUMA_SCALE-fold luma over whole pixels; the mean is that over the cell's width.
	const perCell = 1 / (LUMA_SCALE * (width / grid.width));
	const samples = new Float32Array(grid.width * grid.height);
	const row = new Float64Array(grid.width);
	for (let y = 0; y < height; y++) {
		rowSums(image.data, y * width * channels, channels, spans, row);
		const cellRow = down.first[y]!;
		addRow(samples, grid.width, cellRow, down.part[y]! * perCell, row);
		if (cellRow + 1 < grid.height) addRow(samples, grid.width, cellRow + 1, (down.whole - down.part[y]!) * perCell, row);
	}
	return samples;
}

/** LUMA_SCALE-fold luma of the pixel at `p`, colour or grey. */
function scaledLuma(data: Uint8Array, p: number, coloured: boolean): number {
	return coloured ? LUMA_RED * data[p]! + LUMA_GREEN * data[p + 1]! + LUMA_BLUE * data[p + 2]! : LUMA_SCALE * data[p]!;
}

function rowSums(data: Uint8Array, start: number, channels: number, spans: CellSpans, row: Float64Array): void {
	const coloured = channels >= 3;
	for (let cell = 0; cell < row.length; cell++) {
		const from = spans.from[cell]!;
		const to = spans.to[cell]!;
		let sum = 0;
		if (coloured) {
			for (let p = start + from * channels, end = start + to * channels; p < end; p += channels) sum += LUMA_RED * data[p]! + LUMA_GREEN * data[p + 1]! + LUMA_BLUE * data[p + 2]!;
		} else {
			for (let p = start + from * channels, end = start + to * channels; p < end; p += channels) sum += LUMA_SCALE * data[p]!;
		}
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
	// Storing through a clamped view holds each sample within 0–255.
	const samples = new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.length);
	const across = interpolation(width, grid.width);
	const down = interpolation(height, grid.height);
	// The grid rows above and below the current pixel row, each already interpolated across to
	// every pixel: each grid row is spread across once, not once for every pixel row it touches.
	const spread = { above: new Float32Array(width), below: new Float32Array(width), aboveRow: -1, belowRow: -1 };
	const pixelRow = new Int16Array(width);
	for (let y = 0; y < height; y++) {
		spreadRows(spread, down.before[y]!, down.after[y]!, grid, change, across);
		const lower = down.weight[y]!;
		const { above, below } = spread;
		for (let x = 0; x < width; x++) pixelRow[x] = Math.round(above[x]! + lower * (below[x]! - above[x]!));
		addRowChange(samples, y * width * channels, channels, pixelRow);
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
	for (let x = 0; x < out.length; x++) {
		const left = change[start + across.before[x]!]!;
		out[x] = left + across.weight[x]! * (change[start + across.after[x]!]! - left);
	}
}

function addRowChange(samples: Uint8ClampedArray, start: number, channels: number, pixelRow: Int16Array): void {
	const width = pixelRow.length;
	if (channels === 3) {
		for (let x = 0, p = start; x < width; x++, p += 3) {
			const amount = pixelRow[x]!;
			samples[p]! += amount;
			samples[p + 1]! += amount;
			samples[p + 2]! += amount;
		}
		return;
	}
	const colours = colourChannels(channels);
	for (let x = 0, p = start; x < width; x++, p += channels) {
		const amount = pixelRow[x]!;
		for (let c = p; c < p + colours; c++) samples[c]! += amount;
	}
}
