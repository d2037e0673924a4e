/**
 * A generated image given the invisible watermark (watermark/): decoded to its stored pixels (no
 * EXIF rotation: the mark lives on the pixels as stored), marked in place and encoded again in its
 * own format at the quality the service encodes it with (generation/normalize-output.ts), before
 * its XMP and C2PA manifest are added.
 */
import type { SniffedMedia } from '../../../core/media';
import { ImageBytes } from '../media/image-bytes';
import sharp from '../media/sharp';
import { canCarryWatermark } from './watermark/canonical-grid';
import { embedWatermarkInPlace } from './watermark/embed';

/**
 * The image carrying `payload`, in its own format; undefined for an image the mark cannot live on
 * (too small or too narrow for its grid, which a generated image never is).
 */
export async function watermarkedImage(bytes: Buffer, media: SniffedMedia, payload: Uint8Array): Promise<Buffer | undefined> {
	const { data, info } = await sharp(bytes, { animated: false }).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
	// The pixels are ours alone: given back once encoded, not when the marking thread next collects.
	const pixels = ImageBytes.owned(data);
	try {
		if (!canCarryWatermark(info.width, info.height)) return undefined;
		embedWatermarkInPlace({ data, info: { width: info.width, height: info.height, channels: info.channels } }, payload);
		const image = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
		if (media.type === 'jpeg') return await image.jpeg({ quality: 90 }).toBuffer();
		if (media.type === 'webp') return await image.webp({ quality: 90 }).toBuffer();
		return await image.png().toBuffer();
	} finally {
		pixels.release();
	}
}
