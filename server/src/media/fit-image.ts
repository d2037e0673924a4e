/**
 * `max_side` / `max_bytes` for image uploads: the image is scaled down (ratio kept, never up) to fit
 * `max_side`, then re-encoded, lowering quality and then size step by step, until it is at most
 * `max_bytes`. Platforms such as Instagram reject a media URL whose file is too large, so the
 * caller gets either a file that fits or a 400 saying what the best attempt reached.
 */
import { readFile, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import sharp, { type Sharp } from 'sharp';
import { ImageGenError, invalidField } from '../../../core/errors';
import { MEDIA_DETAILS, type ImageType, type SniffedMedia } from '../../../core/media';
import { formatBytes } from '../net/safe-fetch';

// One-shot work: caching decoded images only costs memory.
sharp.cache(false);

export interface FitImageOptions {
	/** Longest side allowed, in pixels. */
	maxSide?: number;
	/** Largest encoded size allowed, in bytes. */
	maxBytes?: number;
	/** Format of the stored image (the upload's `output_format`, else the format received). */
	format: ImageType;
	/** Request field holding the image, named when it cannot be decoded. */
	field: string;
}

export interface FittedImage {
	data: Buffer;
	media: SniffedMedia;
	width: number;
	height: number;
	/** False when the input already fitted and is answered byte for byte. */
	reencoded: boolean;
}

type Encoding = { quality: number } | { png: sharp.PngOptions } | { gif: sharp.GifOptions };

/** Lossy formats give up quality first, in steps a viewer barely notices at the top end. */
const QUALITY_STEPS = [90, 80, 70, 60, 50, 40] as const;
const LOWEST_QUALITY = 40;
/** Then the picture shrinks, by at most this many further steps... */
const MAX_SCALE_STEPS = 4;
/** ...never below the smallest `max_side` a request may ask for. */
const MIN_SIDE = 16;
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
}

/**
 * Fits `input` (bytes, a stream read into memory, or a file path) to the limits. Throws a 400
 * naming `max_bytes` when no step gets small enough, and one naming `field` when the image cannot
 * be decoded.
 */
export async function fitImage(input: Readable | Buffer | string, options: FitImageOptions): Promise<FittedImage> {
	checkLimit('maxSide', options.maxSide);
	checkLimit('maxBytes', options.maxBytes);
	const source = await describeSource(typeof input === 'string' || Buffer.isBuffer(input) ? input : await readAll(input), options);
	const { width, height } = scaledToSide(source.width, source.height, options.maxSide);

	const untouched =
		width === source.width &&
		source.format === options.format &&
		source.upright &&
		(options.maxBytes === undefined || source.byteLength <= options.maxBytes);
	if (untouched) {
		const data = Buffer.isBuffer(source.input) ? source.input : await readFile(source.input);
		return { data, media: MEDIA_DETAILS[options.format], width, height, reencoded: false };
	}

	const lossless = LOSSLESS_STEPS[options.format];
	return lossless
		? fitLossless(source, width, height, lossless, options)
		: fitLossy(source, width, height, options);
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
		if (options.maxBytes === undefined || data.length <= options.maxBytes) {
			return { data, media: MEDIA_DETAILS[options.format], width, height, reencoded: true };
		}
		if (!smallest || data.length < smallest.length) smallest = data;
	}
	throw cannotFit(options, `${smallest!.length} bytes at ${width}×${height} (the smallest ${options.format.toUpperCase()} encoding); a lossy format such as jpg or webp can go smaller`);
}

async function fitLossy(source: Source, maxWidth: number, maxHeight: number, options: FitImageOptions): Promise<FittedImage> {
	const { maxBytes } = options;
	const fitted = (data: Buffer, width: number, height: number): FittedImage => ({
		data,
		media: MEDIA_DETAILS[options.format],
		width,
		height,
		reencoded: true,
	});
	let data: Buffer = Buffer.alloc(0);
	for (const quality of QUALITY_STEPS) {
		data = await encode(source, maxWidth, maxHeight, options, { quality });
		if (maxBytes === undefined || data.length <= maxBytes) return fitted(data, maxWidth, maxHeight);
	}
	const quality = LOWEST_QUALITY;
	let width = maxWidth;
	let height = maxHeight;
	for (let step = 0; step < MAX_SCALE_STEPS && Math.max(width, height) > MIN_SIDE; step++) {
		// Encoded size grows roughly with the pixel count; aim a little under to land in one step.
		const factor = Math.min(0.9, Math.sqrt(maxBytes! / data.length) * 0.9);
		const side = Math.max(MIN_SIDE, Math.floor(Math.max(width, height) * factor));
		({ width, height } = scaledToSide(maxWidth, maxHeight, side));
		data = await encode(source, width, height, options, { quality });
		if (data.length <= maxBytes!) return fitted(data, width, height);
	}
	throw cannotFit(options, `${data.length} bytes at ${width}×${height}, quality ${quality}`);
}

function cannotFit(options: FitImageOptions, reached: string): ImageGenError {
	return invalidField(
		'max_bytes',
		`The image cannot be made to fit 'max_bytes' (${options.maxBytes} bytes, ${formatBytes(options.maxBytes!)}): the best reached was ${reached}`,
		'cannot_fit',
	);
}

async function encode(source: Source, width: number, height: number, options: FitImageOptions, encoding: Encoding): Promise<Buffer> {
	let pipeline: Sharp = sharp(source.input, { animated: source.animated, failOn: 'error', autoOrient: !source.animated });
	if (width !== source.width || height !== source.height) pipeline = pipeline.resize(width, height, { fit: 'fill' });
	pipeline = withFormat(pipeline, options.format, encoding);
	try {
		return await pipeline.toBuffer();
	} catch (error) {
		throw undecodable(options.field, error);
	}
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
	let metadata: sharp.Metadata;
	try {
		metadata = await sharp(input, { failOn: 'error' }).metadata();
	} catch (error) {
		throw undecodable(options.field, error);
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

function undecodable(field: string, error: unknown): ImageGenError {
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

async function readAll(stream: Readable): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
	return Buffer.concat(chunks);
}
