/**
 * From an encoded image (PNG, JPEG, WebP, anything sharp reads) to its raw pixels and the mark
 * they carry. The pixels are read as stored: an EXIF orientation is not applied (a mark is
 * written on the stored pixels, and survives no rotation, see docs/provenance.md).
 */
import sharp from '../../media/sharp';
import { detectWatermark, type WatermarkReading } from './detect';
import type { RawImage } from './raw-image';

export interface DecodeOptions {
	/** Largest picture decoded, as `sharp(input, { limitInputPixels })` (the service's `--max-image-pixels`). */
	limitInputPixels?: number;
	/** sharp's own time limit on the decoding. */
	timeoutSeconds?: number;
}

/** The first frame's pixels, 8 bits a sample; a RangeError naming `image` for bytes sharp cannot decode. */
export async function decodePixels(bytes: Buffer, options: DecodeOptions = {}): Promise<RawImage> {
	try {
		let pipeline = sharp(bytes, { animated: false, limitInputPixels: options.limitInputPixels ?? true });
		if (options.timeoutSeconds !== undefined) pipeline = pipeline.timeout({ seconds: options.timeoutSeconds });
		const { data, info } = await pipeline.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
		return { data, info: { width: info.width, height: info.height, channels: info.channels } };
	} catch (error) {
		throw new RangeError(`image could not be decoded: ${(error as Error).message}`, { cause: error });
	}
}

/** Decodes `bytes` and reads the mark they carry (see detectWatermark). */
export async function detectWatermarkInImage(bytes: Buffer, options: DecodeOptions = {}): Promise<WatermarkReading> {
	return detectWatermark(await decodePixels(bytes, options));
}
