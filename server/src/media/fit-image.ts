/**
 * `max_side` / `max_bytes` for image uploads: the image is scaled down (ratio kept, never up) to fit
 * `max_side`, then re-encoded, lowering quality and then size step by step, until it is at most
 * `max_bytes`. Platforms such as Instagram reject a media URL whose file is too large, so the
 * caller gets either a file that fits or a 400 saying what the best attempt reached.
 */
import { stat } from 'node:fs/promises';
import type { GifOptions, Metadata, PngOptions, Sharp } from 'sharp';
import sharp from './sharp';
import { ImageGenError, invalidField } from '../../../core/errors';
import { MEDIA_DETAILS, type ImageType, type SniffedMedia } from '../../../core/media';
import { formatBytes } from '../../../core/units';
import { imageTooLarge, isPixelLimitError } from './image-header';
import type { ImageTask } from './image-work';

export interface FitImageOptions {
	/** Longest side allowed, in pixels. */
	maxSide?: number;
	/** Largest encoded size allowed, in bytes. */
	maxBytes?: number;
	/** Format of the stored image (the upload's `output_format`, else the format received). */
	format: ImageType;
	/** Request field holding the image, named when it cannot be decoded. */
	field: string;
	/** The queue slot this runs in (media/image-work.ts): pixel limit, time budget, client gone. */
	task?: ImageTask;
	/**
	 * Re-encode even an image that already fits, so none of its metadata (GPS positions, device
	 * serials) is carried over as it is.
	 */
	alwaysReencode?: boolean;
}

export interface FittedImage {
	/** Empty when the input was a file path that already fitted: the file itself is the answer. */
	data: Buffer;
	media: SniffedMedia;
	width: number;
	height: number;
	/** False when the input already fitted and is answered byte for byte. */
	reencoded: boolean;
}

type Encoding = { quality: number } | { png: PngOptions } | { gif: GifOptions };

/** Lossy formats give up quality first, in steps a viewer barely notices at the top end. */
const QUALITY_STEPS = [90, 80, 70, 60, 50, 40] as const;
const LOWEST_QUALITY = 40;
/** Then the picture shrinks, in at most this many further encodings... */
const MAX_SCALE_STEPS = 5;
/** ...stopping once a fit uses this share of `max_bytes`, */
const CLOSE_ENOUGH = 0.8;
/** and never going below the smallest `max_side` a request may ask for. */
const MIN_SIDE = 16;
/** Decoded pixels kept between steps: 8192×8192 RGBA would be 256 MiB, so big ones decode per step. */
const MAX_RAW_BYTES = 64 * 1024 * 1024;
const LOSSLESS_STEPS: Partial<Record<ImageType, Encoding[]>> = {
	// Lossless formats cannot trade quality for size; a palette is the one lossy step worth trying.
	png: [
		{ png: { compressionLevel: 6 } },
		{ png: { compressionLevel: 9, adaptiveFiltering: true } },
		{ png: { compressionLevel: 9, adaptiveFiltering: true, palette: true, quality: 100, effort: 10 } },
	],
	gif: [{ gif: { effort: 7 } }, { gif: { effort: 10, colours: 64 } }],
};

interface Source {
	input: Buffer | string;
	width: number;
	height: number;
	animated: boolean;
	format: string;
	/** The encoded input is already oriented (no EXIF rotation pending). */
	upright: boolean;
	byteLength: number;
	/** Set when `input` holds decoded, upright pixels of `width`×`height`. */
	raw?: { width: number; height: number; channels: 1 | 2 | 3 | 4 };
}

/**
 * Fits `input` (bytes, or a file path that libvips reads itself, so a 300 MB upload is never
 * copied into memory) to the limits. Throws a 400 naming `max_bytes` when no step gets small
 * enough, and one naming `field` when the image cannot be decoded or has too many pixels.
 */
export async function fitImage(input: Buffer | string, options: FitImageOptions): Promise<FittedImage> {
	checkLimit('maxSide', options.maxSide);
	checkLimit('maxBytes', options.maxBytes);
	const source = await describeSource(input, options);
	const { width, height } = scaledToSide(source.width, source.height, options.maxSide);

	const untouched =
		!options.alwaysReencode &&
		width === source.width &&
		source.format === options.format &&
		source.upright &&
		(options.maxBytes === undefined || source.byteLength <= options.maxBytes);
	if (untouched) {
		const data = Buffer.isBuffer(source.input) ? source.input : Buffer.alloc(0);
		return { data, media: MEDIA_DETAILS[options.format], width, height, reencoded: false };
	}

	const prepared = await decodeOnce(source, width, height, options);
	const lossless = LOSSLESS_STEPS[options.format];
	return lossless
		? fitLossless(prepared, width, height, lossless, options)
		: fitLossy(prepared, width, height, options);
}

/**
 * Every step encodes the same upright picture at `max_side`: decode, orient and scale it once
 * into raw pixels, unless those would take too much memory (or the image is animated).
 */
async function decodeOnce(source: Source, width: number, height: number, options: FitImageOptions): Promise<Source> {
	if (source.animated || width * height * 4 > MAX_RAW_BYTES) return source;
	try {
		options.task?.throwIfStopped();
		const { data, info } = await pipelineFor(source, options)
			.resize(width, height, { fit: 'fill' })
			.raw()
			.toBuffer({ resolveWithObject: true });
		return { ...source, input: data, raw: { width: info.width, height: info.height, channels: info.channels }, width, height };
	} catch (error) {
		throw undecodable(options, error);
	}
}

async function fitLossless(
	source: Source,
	width: number,
	height: number,
	steps: Encoding[],
	options: FitImageOptions,
): Promise<FittedImage> {
	let smallest: Buffer | undefined;
	for (const encoding of steps) {
		const data = await encode(source, width, height, options, encoding);
		if (options.maxBytes === undefined || data.length <= options.maxBytes) return reencoded(options, data, width, height);
		if (!smallest || data.length < smallest.length) smallest = data;
	}
	throw cannotFit(options, `${smallest!.length} bytes at ${width}×${height} (the smallest ${options.format.toUpperCase()} encoding); a lossy format such as jpg or webp can go smaller`);
}

async function fitLossy(source: Source, maxWidth: number, maxHeight: number, options: FitImageOptions): Promise<FittedImage> {
	const { maxBytes } = options;
	let data: Buffer = Buffer.alloc(0);
	for (const quality of QUALITY_STEPS) {
		data = await encode(source, maxWidth, maxHeight, options, { quality });
		if (maxBytes === undefined || data.length <= maxBytes) return reencoded(options, data, maxWidth, maxHeight);
	}
	return shrinkToFit(source, maxWidth, maxHeight, data.length, options);
}

/**
 * Lowest quality still too large: search the size. Encoded size grows as a power of the side
 * (about 2, less for grainy pictures, which smooth out when scaled down); each step aims with the
 * power measured between the nearest sizes tried on either side, so few encodings land close below
 * `max_bytes` and the answer keeps as many pixels as the limit allows.
 */
async function shrinkToFit(
	source: Source,
	maxWidth: number,
	maxHeight: number,
	fullSizeBytes: number,
	options: FitImageOptions,
): Promise<FittedImage> {
	const target = options.maxBytes! * 0.95;
	const quality = LOWEST_QUALITY;
	let tooBig = { side: Math.max(maxWidth, maxHeight), bytes: fullSizeBytes };
	let best: { side: number; data: Buffer; width: number; height: number } | undefined;
	let last = { bytes: fullSizeBytes, width: maxWidth, height: maxHeight };
	for (let step = 0; step < MAX_SCALE_STEPS; step++) {
		const power = best ? Math.log(tooBig.bytes / best.data.length) / Math.log(tooBig.side / best.side) : 2;
		const aimed = Math.floor(tooBig.side * Math.pow(target / tooBig.bytes, 1 / Math.max(power, 0.5)));
		const floor = best ? best.side + 1 : MIN_SIDE;
		const side = Math.max(floor, Math.min(aimed, tooBig.side - 1));
		if (side >= tooBig.side) break;
		const { width, height } = scaledToSide(maxWidth, maxHeight, side);
		const data = await encode(source, width, height, options, { quality });
		last = { bytes: data.length, width, height };
		if (data.length <= options.maxBytes!) {
			best = { side, data, width, height };
			if (data.length >= options.maxBytes! * CLOSE_ENOUGH) break;
		} else {
			tooBig = { side, bytes: data.length };
		}
	}
	if (best) return reencoded(options, best.data, best.width, best.height);
	throw cannotFit(options, `${last.bytes} bytes at ${last.width}×${last.height}, quality ${quality}`);
}

function reencoded(options: FitImageOptions, data: Buffer, width: number, height: number): FittedImage {
	return { data, media: MEDIA_DETAILS[options.format], width, height, reencoded: true };
}

/** The exact byte count (what was asked for), and its MiB reading where that is shorter to read. */
function describeLimit(maxBytes: number): string {
	const readable = formatBytes(maxBytes);
	return readable === `${maxBytes} bytes` ? readable : `${maxBytes} bytes, ${readable}`;
}

export function cannotFit(options: FitImageOptions, reached: string): ImageGenError {
	return invalidField(
		'max_bytes',
		`The image cannot be made to fit 'max_bytes' (${describeLimit(options.maxBytes!)}): the best reached was ${reached}`,
		'cannot_fit',
	);
}

async function encode(source: Source, width: number, height: number, options: FitImageOptions, encoding: Encoding): Promise<Buffer> {
	options.task?.throwIfStopped();
	let pipeline = pipelineFor(source, options);
	if (width !== source.width || height !== source.height) pipeline = pipeline.resize(width, height, { fit: 'fill' });
	pipeline = withFormat(pipeline, options.format, encoding);
	try {
		return await pipeline.toBuffer();
	} catch (error) {
		throw undecodable(options, error);
	}
}

function pipelineFor(source: Source, options: FitImageOptions): Sharp {
	const limits = limitsOf(options);
	const pipeline = source.raw
		? sharp(source.input, { raw: source.raw, ...limits })
		: sharp(source.input, { animated: source.animated, failOn: 'error', autoOrient: !source.animated, ...limits });
	return options.task ? pipeline.timeout({ seconds: options.task.timeoutSeconds() }) : pipeline;
}

/** The second line after the header check: libvips itself refuses more pixels than the task allows. */
function limitsOf(options: FitImageOptions): { limitInputPixels?: number } {
	return options.task ? { limitInputPixels: options.task.limitInputPixels } : {};
}

function withFormat(pipeline: Sharp, format: ImageType, encoding: Encoding): Sharp {
	if ('png' in encoding) return pipeline.png(encoding.png);
	if ('gif' in encoding) return pipeline.gif(encoding.gif);
	const { quality } = encoding;
	switch (format) {
		case 'jpeg':
			// JPEG has no alpha: transparent areas become white rather than black.
			return pipeline.flatten({ background: '#ffffff' }).jpeg({ quality });
		case 'webp':
			return pipeline.webp({ quality });
		case 'avif':
			return pipeline.avif({ quality });
		default:
			throw new Error(`No lossy encoding for ${format}`);
	}
}

async function describeSource(input: Buffer | string, options: FitImageOptions): Promise<Source> {
	let metadata: Metadata;
	try {
		metadata = await sharp(input, { failOn: 'error', ...limitsOf(options) }).metadata();
	} catch (error) {
		throw undecodable(options, error);
	}
	const pages = metadata.pages ?? 1;
	// Frames survive only in formats that can hold them; otherwise the first frame is stored.
	const animated = pages > 1 && (options.format === 'webp' || options.format === 'gif');
	const orientation = metadata.orientation ?? 1;
	const { width, height } = animated
		? { width: metadata.width, height: metadata.pageHeight ?? metadata.height }
		: metadata.autoOrient;
	return {
		input,
		width,
		height,
		animated,
		format: metadata.format === 'heif' && metadata.compression === 'av1' ? 'avif' : metadata.format,
		upright: orientation === 1 || animated,
		byteLength: Buffer.isBuffer(input) ? input.length : (await stat(input)).size,
	};
}

/** The size with the long side at most `maxSide`, ratio kept (to the nearest pixel), never enlarged. */
export function scaledToSide(width: number, height: number, maxSide: number | undefined): { width: number; height: number } {
	const longSide = Math.max(width, height);
	if (maxSide === undefined || longSide <= maxSide) return { width, height };
	const scale = maxSide / longSide;
	return {
		width: width >= height ? maxSide : Math.max(1, Math.round(width * scale)),
		height: height > width ? maxSide : Math.max(1, Math.round(height * scale)),
	};
}

function undecodable(options: FitImageOptions, error: unknown): ImageGenError {
	if (error instanceof ImageGenError) return error;
	const { field, task } = options;
	if (task && isPixelLimitError(error)) return imageTooLarge({ field, status: 400 }, task.limitInputPixels);
	return new ImageGenError(400, `'${field}' could not be decoded to fit it: the image data is damaged`, {
		param: field,
		code: 'undecodable_image',
		cause: error,
	});
}

function checkLimit(name: string, value: number | undefined): void {
	if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
		throw new RangeError(`${name} must be a positive integer; got ${value}`);
	}
}
