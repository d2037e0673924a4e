/**
 * Whatever a provider hands back, the caller gets what they asked for: the requested format at
 * the aspect ratio's dimensions. Bytes that already match pass through untouched. A provider's
 * image is decoded only within the pixel limit (a broken or hostile host is a 502, never our
 * memory) and in a slot of the image queue. An image about to be watermarked is answered as its
 * fitted pixels instead of encoded: the marking encodes it once, with the mark in it, where
 * encoding it here would have it decoded and encoded again there (a noisy 1 MP PNG's encode is the
 * longest step of a fitted generation).
 */
import type { SharpOptions } from 'sharp';
import { encodedAs } from '../media/convert-image';
import sharp from '../media/sharp';
import { ImageGenError } from '../../../core/errors';
import { MEDIA_DETAILS, sniffMedia, type SniffedMedia } from '../../../core/media';
import { dimensionsFor } from '../../../core/models';
import { checkPixels, declaredSize, imageTooLarge, isPixelLimitError, type ImageSource } from '../media/image-header';
import type { ImageTask, ImageWork } from '../media/image-work';
import type { ImageChange } from '../provenance/provenance-marker';
import type { RawImage } from '../provenance/watermark/raw-image';
import type { SettledRequest } from './provider';

/** The image as the caller asked for it: encoded, or (`asPixels`, when it had to change) its decoded pixels. */
export type FinishedImage = ({ bytes: Buffer } | { pixels: RawImage }) & {
	/** What the image is, or is to be encoded as. */
	media: SniffedMedia;
	/** What the re-encode did, for the C2PA manifest; empty when the provider's bytes pass through. */
	changes: ImageChange[];
};

export async function normalizeOutput(
	bytes: Buffer,
	request: Pick<SettledRequest, 'aspect_ratio' | 'output_format'>,
	provider: string,
	imageWork: ImageWork,
	{ signal, asPixels = false }: { signal?: AbortSignal; asPixels?: boolean } = {},
): Promise<FinishedImage> {
	const media = sniffMedia(bytes);
	if (!media || media.kind !== 'image') {
		throw new ImageGenError(502, `The ${provider} provider returned something that is not an image`, { code: 'upstream_invalid_output' });
	}
	const source: ImageSource = { field: 'output', status: 502, provider };
	const wanted = MEDIA_DETAILS[request.output_format];
	const target = dimensionsFor(request.aspect_ratio);
	const sameType = media.type === wanted.type;
	const asItCame: FinishedImage = { bytes, media, changes: [] };
	// The header says the size without decoding anything, synchronously: an image that already
	// matches goes out as it came, without waiting for a slot of the queue meant for decoding.
	const declared = declaredSize(bytes);
	checkPixels(declared, imageWork.maxPixels, source);
	if (declared && sameType && fitsTarget(declared, target)) return asItCame;
	return imageWork.run(
		async (task) => {
			const metadata = declared ?? (await decoding(sharp(bytes, options(task)).metadata(), source, task));
			const sizeOk = fitsTarget(metadata, target);
			if (sameType && sizeOk) return asItCame;
			const changes: ImageChange[] = sameType ? [] : ['converted'];
			if (!sizeOk) changes.push('resized');

			let pipeline = sharp(bytes, { animated: false, ...options(task) })
				.timeout({ seconds: task.timeoutSeconds() })
				.rotate();
			if (!sizeOk) pipeline = pipeline.resize(target.width, target.height, { fit: 'cover' });
			if (asPixels) {
				// As the encode would leave them: a JPEG's transparency on white.
				if (request.output_format === 'jpeg') pipeline = pipeline.flatten({ background: '#ffffff' });
				const { data, info } = await decoding(pipeline.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true }), source, task);
				return { pixels: { data, info: { width: info.width, height: info.height, channels: info.channels } }, media: wanted, changes };
			}
			return { bytes: await decoding(encodedAs(pipeline, request.output_format).toBuffer(), source, task), media: wanted, changes };
		},
		{ signal },
	);
}

/** Within 3 % of the aspect ratio, and a long side of 1024 to 2048 px: close enough to keep. */
function fitsTarget(size: { width?: number; height?: number }, target: { width: number; height: number }): boolean {
	const ratioOff = Math.abs((size.width ?? 0) / (size.height ?? 1) / (target.width / target.height) - 1);
	const longSide = Math.max(size.width ?? 0, size.height ?? 0);
	return ratioOff <= 0.03 && longSide >= 1024 && longSide <= 2048;
}

function options(task: ImageTask): SharpOptions {
	return { limitInputPixels: task.limitInputPixels };
}

/** sharp failing on a provider's bytes is the provider's fault: a 502. */
async function decoding<T>(work: Promise<T>, source: ImageSource & { status: 502 }, task: ImageTask): Promise<T> {
	try {
		return await work;
	} catch (error) {
		if (isPixelLimitError(error)) throw imageTooLarge(source, task.limitInputPixels);
		task.throwIfStopped();
		throw new ImageGenError(502, `The ${source.provider} provider returned an image that cannot be decoded`, { code: 'upstream_invalid_output', cause: error });
	}
}
