/**
 * Checking an image for both marks (docs/provenance.md, "Checking an image"): its C2PA layer
 * (c2pa-layer.ts), the watermark in its pixels, and the generation the watermark names, when this
 * service keeps that record and the caller may know it. Shared by POST /v1/provenance/verify and
 * the MCP tool `verify_image` (through image-verifier.ts) and by `imagegen-server verify`.
 */
import { z } from 'zod/v3';
import { ImageGenError, invalidField } from '../../../core/errors';
import { sniffMedia, type SniffedMedia } from '../../../core/media';
import { formatBytes } from '../../../core/units';
import { declaredSize } from '../media/image-header';
import { readC2paLayer } from './c2pa-layer';
import { payloadHex, type ProvenanceRecordStore } from './provenance-records';
import type { WatermarkReading } from './watermark/detect';

/**
 * The largest file checked. c2pa-rs reads a whole file into WebAssembly memory that never shrinks,
 * and a check holds the file in memory from first byte to answer: the bound of a manifest read
 * (verified-provenance.ts), whatever a larger upload limit allows.
 */
export const VERIFY_MAX_BYTES = 64 * 1024 * 1024;

export const verifyAnswerSchema = z
	.object({
		c2pa: z.object({
			present: z.boolean().describe('The image carries a C2PA manifest store (valid or not)'),
			valid: z.boolean().describe('c2pa-rs validated it: claim, signature and hash binding intact (the signer is not judged against a trust list)'),
			signer: z.string().nullable().describe("The signing certificate's common name"),
			digital_source_type: z.string().nullable().describe('The IPTC digital source type the valid manifest states'),
		}),
		watermark: z.object({
			found: z.boolean().describe('A watermark whose checksum matches was read from the pixels'),
			algorithm: z.string().nullable().describe('The watermark found'),
			payload: z.string().nullable().describe('Its payload, 16 hex digits: the provenance record it names'),
		}),
		generation: z
			.object({ id: z.string(), model: z.string(), created_at: z.string().describe('ISO 8601') })
			.nullable()
			.describe('The generation the watermark names: only for a record this service keeps, and only to the API key that made it'),
	})
	.describe('What the image carries');
export type VerifyAnswer = z.infer<typeof verifyAnswerSchema>;

/** Who asks: an API key is told the generations of its own images only; the operator (the CLI on the data dir) of every one. */
export type VerifyCaller = { apiKeyId: string } | { operator: true };

export interface CheckedImage {
	bytes: Buffer;
	media: SniffedMedia;
	/** The request field the image came in, named by every refusal. */
	field: string;
}

/** The bytes as an image to check: an image by its bytes, within the size and pixel limits; otherwise a refusal naming `field`. */
export function checkedImage(bytes: Buffer, field: string, limits: { maxBytes: number; maxPixels: number }): CheckedImage {
	if (bytes.length > limits.maxBytes) throw imageTooLarge(field, limits.maxBytes);
	const media = sniffMedia(bytes);
	if (!media || media.kind !== 'image') {
		const what = media ? `a ${media.type} video` : 'not an image';
		throw invalidField(field, `'${field}' is ${what}: send a PNG, JPEG, WebP, GIF or AVIF image`, 'not_an_image');
	}
	const size = declaredSize(bytes);
	if (!size) throw invalidField(field, `'${field}' could not be read as a ${media.type} image: its header is damaged`, 'undecodable_image');
	const pixels = size.width * size.height;
	if (pixels > limits.maxPixels) {
		throw invalidField(field, `'${field}' is ${size.width} × ${size.height} = ${pixels} px; this server decodes at most ${limits.maxPixels} px (--max-image-pixels)`, 'image_too_large');
	}
	return { bytes, media, field };
}

export function imageTooLarge(field: string, maxBytes: number): ImageGenError {
	return new ImageGenError(413, `'${field}' is larger than the ${formatBytes(maxBytes)} an image to verify may be`, { param: field, code: 'file_too_large' });
}

export interface VerifyParts {
	/** Decodes the pixels and reads their watermark (off the event loop's way: the image queue, or the CLI's own process). */
	readWatermark(image: CheckedImage): Promise<WatermarkReading>;
	records: Pick<ProvenanceRecordStore, 'find'>;
	caller: VerifyCaller;
}

/** Both layers read at once; the record looked up only for a mark found. */
export async function verifyImage(image: CheckedImage, parts: VerifyParts): Promise<VerifyAnswer> {
	const [c2pa, reading] = await Promise.all([readC2paLayer(image.bytes, image.media.mimeType), readOrRefuse(image, parts)]);
	if (!reading.found) return { c2pa, watermark: { found: false, algorithm: null, payload: null }, generation: null };
	const record = await parts.records.find(reading.payload);
	const known = record !== null && ('operator' in parts.caller || record.apiKeyId === parts.caller.apiKeyId);
	return {
		c2pa,
		watermark: { found: true, algorithm: reading.algorithm, payload: payloadHex(reading.payload) },
		generation: known ? { id: record.generationId, model: record.model, created_at: record.createdAt.toISOString() } : null,
	};
}

/** Bytes that look like an image but do not decode (truncated, damaged) are the caller's: a 400 naming the field. */
async function readOrRefuse(image: CheckedImage, parts: VerifyParts): Promise<WatermarkReading> {
	try {
		return await parts.readWatermark(image);
	} catch (error) {
		if (error instanceof RangeError) throw invalidField(image.field, `'${image.field}' ${error.message.replace(/^image /, '')}`, 'undecodable_image');
		throw error;
	}
}
