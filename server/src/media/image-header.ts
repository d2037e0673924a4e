/**
 * The first line against image bombs: a picture's size is read from its header (image-size, plain
 * JavaScript, no decoding, no thread-pool work) before anything decodes it. A 750 KB PNG can
 * declare 16000 × 16000 px, which takes ~1 GB and a long while to decode; such a file is refused
 * from its first bytes. sharp's `limitInputPixels` is the second line, for headers image-size
 * cannot read.
 */
import { open } from 'node:fs/promises';
import { imageSize } from 'image-size';
import { ImageGenError } from '../../../core/errors';

interface ImageDimensions {
	width: number;
	height: number;
}

/** Who sent the image decides the status: a client's is a 400, a provider's a 502. */
export type ImageSource = { field: string; status: 400 } | { field: string; status: 502; provider: string };

/** Leading bytes read from a file; a JPEG's frame header can sit behind large EXIF/ICC segments. */
const HEAD_STEPS = [64 * 1024, 1024 * 1024] as const;

/** The size a header declares, or null when image-size cannot read it (sharp then decides). */
export function declaredSize(bytes: Uint8Array): ImageDimensions | null {
	try {
		const { width, height } = imageSize(bytes);
		return width > 0 && height > 0 ? { width, height } : null;
	} catch {
		return null;
	}
}

/** The same from a file, reading only its head. */
export async function declaredSizeOfFile(path: string): Promise<ImageDimensions | null> {
	const handle = await open(path, 'r');
	try {
		for (const length of HEAD_STEPS) {
			const head = Buffer.alloc(length);
			const { bytesRead } = await handle.read(head, 0, length, 0);
			const size = declaredSize(head.subarray(0, bytesRead));
			if (size || bytesRead < length) return size;
		}
		return null;
	} finally {
		await handle.close();
	}
}

/** Throws `image_too_large` when the declared picture has more than `maxPixels` pixels. */
export function checkPixels(size: ImageDimensions | null, maxPixels: number, source: ImageSource): void {
	if (size && size.width * size.height > maxPixels) throw imageTooLarge(source, maxPixels, size);
}

export function imageTooLarge(source: ImageSource, maxPixels: number, size?: ImageDimensions): ImageGenError {
	const declared = size ? ` (${size.width} × ${size.height} = ${formatPixels(size.width * size.height)})` : '';
	if (source.status === 502) {
		return new ImageGenError(502, `The ${source.provider} provider returned an image larger than the ${formatPixels(maxPixels)} this server decodes${declared}`, {
			code: 'image_too_large',
		});
	}
	return new ImageGenError(
		400,
		`'${source.field}' is larger than the ${formatPixels(maxPixels)} this server decodes${declared}; send a smaller image, or upload it without output_format, max_side and max_bytes to host it as is`,
		{ param: source.field, code: 'image_too_large' },
	);
}

/** sharp's message when `limitInputPixels` stops a decode. */
export function isPixelLimitError(error: unknown): boolean {
	return error instanceof Error && /pixel limit/i.test(error.message);
}

function formatPixels(pixels: number): string {
	return pixels >= 1_000_000 ? `${Math.round(pixels / 100_000) / 10} MP` : `${pixels} px`;
}
