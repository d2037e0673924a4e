/**
 * Whatever a provider hands back, the caller gets what they asked for: the requested format at
 * the aspect ratio's dimensions. Bytes that already match pass through untouched.
 */
import { imageSize } from 'image-size';
import sharp from '../media/sharp';
import { ImageGenError } from '../../../core/errors';
import { MEDIA_DETAILS, sniffMedia, type SniffedMedia } from '../../../core/media';
import { dimensionsFor } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';

export interface FinishedImage {
	bytes: Buffer;
	media: SniffedMedia;
}

export async function normalizeOutput(bytes: Buffer, request: GenerationRequest, provider: string): Promise<FinishedImage> {
	const media = sniffMedia(bytes);
	if (!media || media.kind !== 'image') {
		throw new ImageGenError(502, `The ${provider} provider returned something that is not an image`, { code: 'upstream_invalid_output' });
	}
	const wanted = MEDIA_DETAILS[request.output_format];
	const target = dimensionsFor(request.aspect_ratio);
	// The header says the size without decoding anything, synchronously; sharp reads it only when
	// the header is unusual, because its work queues behind disk writes in the same thread pool.
	let metadata: { width?: number; height?: number };
	try {
		metadata = imageSize(bytes);
	} catch {
		metadata = await sharp(bytes)
			.metadata()
			.catch(() => {
				throw new ImageGenError(502, `The ${provider} provider returned an image that cannot be decoded`, { code: 'upstream_invalid_output' });
			});
	}
	const ratioOff = Math.abs((metadata.width ?? 0) / (metadata.height ?? 1) / (target.width / target.height) - 1);
	const longSide = Math.max(metadata.width ?? 0, metadata.height ?? 0);
	const sizeOk = ratioOff <= 0.03 && longSide >= 1024 && longSide <= 2048;
	if (media.type === wanted.type && sizeOk) return { bytes, media };

	let pipeline = sharp(bytes, { animated: false }).rotate();
	if (!sizeOk) pipeline = pipeline.resize(target.width, target.height, { fit: 'cover' });
	if (request.output_format === 'jpeg') pipeline = pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: 90 });
	else if (request.output_format === 'webp') pipeline = pipeline.webp({ quality: 90 });
	else pipeline = pipeline.png();
	return { bytes: await pipeline.toBuffer(), media: wanted };
}
