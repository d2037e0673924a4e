/**
 * A generated image given the invisible watermark (watermark/), before its XMP and C2PA manifest
 * are added. Its pixels as stored are marked (no EXIF rotation: the mark lives on the pixels as
 * stored) and encoded in the image's own format as the service encodes what it writes
 * (media/convert-image.ts). Encoded bytes are decoded for it; the fit's pixels
 * (generation/normalize-output.ts) are marked as they are, so such an image is encoded only once.
 */
import type { SniffedMedia } from '../../../core/media';
import type { ImageOutputFormat } from '../../../core/models';
import { encodedAs } from '../media/convert-image';
import { ImageBytes } from '../media/image-bytes';
import { releaseBytes } from '../media/release-bytes';
import sharp from '../media/sharp';
import { canCarryWatermark } from './watermark/canonical-grid';
import { embedWatermarkInPlace } from './watermark/embed';
import type { RawImage } from './watermark/raw-image';

/** The image to sign, and whether its pixels carry the watermark. */
export interface DrawnImage {
	image: ImageBytes;
	watermarked: boolean;
}

/**
 * The image carrying `payload` when it can (a generated image always can: only one too small or
 * too narrow for the mark's grid cannot). Encoded bytes stay their owner's and are answered as they
 * are when nothing is to be marked; pixels are this call's own, marked in place and given back
 * once encoded.
 */
export async function watermarkedImage(image: Buffer | RawImage, media: SniffedMedia, payload: Uint8Array | undefined): Promise<DrawnImage> {
	if (!Buffer.isBuffer(image)) {
		const watermarked = payload !== undefined && canCarryWatermark(image.info.width, image.info.height);
		return { image: ImageBytes.owned(await encoded(image, media, watermarked ? payload : undefined)), watermarked };
	}
	if (!payload) return { image: ImageBytes.lent(image), watermarked: false };
	const { data, info } = await sharp(image, { animated: false }).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
	const pixels: RawImage = { data, info: { width: info.width, height: info.height, channels: info.channels } };
	if (!canCarryWatermark(info.width, info.height)) {
		releaseBytes(data);
		return { image: ImageBytes.lent(image), watermarked: false };
	}
	return { image: ImageBytes.owned(await encoded(pixels, media, payload)), watermarked: true };
}

/** `pixels` marked with `payload` when given, then encoded; the pixels given back at once, not when the thread next collects. */
async function encoded(pixels: RawImage, media: SniffedMedia, payload: Uint8Array | undefined): Promise<Buffer> {
	try {
		if (payload) embedWatermarkInPlace(pixels, payload);
		const { width, height, channels } = pixels.info;
		return await encodedAs(sharp(pixels.data, { raw: { width, height, channels: channels as 1 | 2 | 3 | 4 } }), formatOf(media)).toBuffer();
	} finally {
		releaseBytes(pixels.data);
	}
}

/** A generated image is in one of the output formats (normalize-output.ts); anything else is written as PNG. */
function formatOf(media: SniffedMedia): ImageOutputFormat {
	return media.type === 'jpeg' || media.type === 'webp' ? media.type : 'png';
}
