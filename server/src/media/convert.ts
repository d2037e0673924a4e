/**
 * `output_format` conversion of uploaded images with sharp, file to file so large images never sit
 * in our heap twice. Animated GIF/WebP stay animated when the target is WebP.
 */
import sharp from 'sharp';
import { ImageGenError, invalidField } from '../../../core/errors';
import type { UploadOutputFormat } from '../../../core/schemas';

// Converting is one-shot work: caching decoded images only costs memory.
sharp.cache(false);

export async function convertImage(
	inputPath: string,
	outputPath: string,
	format: UploadOutputFormat,
	field: string,
): Promise<void> {
	const animated = format === 'webp';
	try {
		let pipeline = sharp(inputPath, { animated, failOn: 'error' });
		if (!animated) pipeline = pipeline.rotate();
		if (format === 'jpeg') pipeline = pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: 90, mozjpeg: false });
		else if (format === 'png') pipeline = pipeline.png();
		else pipeline = pipeline.webp({ quality: 90 });
		await pipeline.toFile(outputPath);
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error);
		if (/no space left|quota/i.test(message)) {
			throw new ImageGenError(507, 'The server has no storage space left for this file; try again later', {
				code: 'insufficient_storage',
			});
		}
		throw invalidField(field, `'${field}' could not be decoded to convert it to ${format}: the image data is damaged`, 'undecodable_image');
	}
}
