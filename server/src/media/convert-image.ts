/**
 * The re-encode of an upload's `output_format`: upright, animation kept for WebP, transparency on
 * white for JPEG. A failure of sharp itself means the image is damaged: a 400 naming the field
 * (too many pixels: `image_too_large`), never the storage's error and never a 500.
 */
import { PassThrough, type Readable } from 'node:stream';
import type { Sharp } from 'sharp';
import sharp from './sharp';
import { invalidField } from '../../../core/errors';
import type { ImageOutputFormat } from '../../../core/models';
import type { UploadOutputFormat } from '../../../core/schemas';
import { imageTooLarge, isPixelLimitError } from './image-header';
import type { ImageTask } from './image-work';

/** A conversion streaming out of sharp; `decodeFailed` tells its own errors from the reader's. */
interface ImageConversion {
	output: Readable;
	decodeFailed(error: unknown): boolean;
	stop(): void;
}

/** The image file `input` converted to `format`, as a stream (for storage that takes one). */
export function streamConversion(input: string, format: UploadOutputFormat, task: ImageTask): ImageConversion {
	const converter = converterFor(input, format, task);
	// Between sharp and the reader, so a reader's failure never reads as sharp's and vice versa.
	const output = new PassThrough();
	let decodeError: unknown;
	converter.once('error', (error) => {
		decodeError = error;
		output.destroy(error);
	});
	converter.pipe(output);
	return { output, decodeFailed: (error) => error !== undefined && error === decodeError, stop: () => converter.destroy() };
}

/** The image file `input` converted to `format`, in memory (for bytes that are signed before storing). */
export async function convertToBuffer(input: string, format: UploadOutputFormat, field: string, task: ImageTask): Promise<{ data: Buffer; info: { width: number; height: number } }> {
	try {
		return await converterFor(input, format, task).toBuffer({ resolveWithObject: true });
	} catch (error) {
		throw conversionError(error, field, format, task);
	}
}

export function conversionError(error: unknown, field: string, format: UploadOutputFormat, task: ImageTask): Error {
	if (isPixelLimitError(error)) return imageTooLarge({ field, status: 400 }, task.limitInputPixels);
	return invalidField(field, `'${field}' could not be decoded to convert it to ${format}: the image data is damaged`, 'undecodable_image');
}

function converterFor(input: string, format: UploadOutputFormat, task: ImageTask): Sharp {
	const animated = format === 'webp';
	let converter = sharp(input, { animated, failOn: 'error', limitInputPixels: task.limitInputPixels }).timeout({ seconds: task.timeoutSeconds() });
	if (!animated) converter = converter.rotate();
	return encodedAs(converter, format);
}

/**
 * The service's one encoding of an image it writes: JPEG and WebP at quality 90 (transparency on
 * white for JPEG, which has none), PNG at libvips' defaults.
 */
export function encodedAs(pipeline: Sharp, format: ImageOutputFormat): Sharp {
	if (format === 'jpeg') return pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: 90, mozjpeg: false });
	if (format === 'webp') return pipeline.webp({ quality: 90 });
	return pipeline.png();
}
