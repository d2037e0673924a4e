/**
 * Images that really carry the watermark: pixels made by sharp, marked by embedWatermark with the
 * payload of a provenance record the test wrote, and encoded as a platform would serve them. The
 * same pixels unmarked are what nobody marked.
 */
import sharp from 'sharp';
import { newProvenancePayload, type NewProvenanceRecord, type ProvenanceRecordStore } from '../../../../server/src/provenance/provenance-records';
import { embedWatermark } from '../../../../server/src/provenance/watermark/embed';
import type { RawImage } from '../../../../server/src/provenance/watermark/raw-image';

export type MarkedFormat = 'png' | 'jpeg';

/** A picture with texture and a gradient, as generated images have; the same one for the same size. */
async function picture(width: number, height: number): Promise<RawImage> {
	const noise = await sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).png().toBuffer();
	const { data, info } = await sharp(noise).blur(1.5).raw().toBuffer({ resolveWithObject: true });
	return { data, info: { width: info.width, height: info.height, channels: info.channels } };
}

async function encode(pixels: RawImage, format: MarkedFormat): Promise<Buffer> {
	const { width, height, channels } = pixels.info;
	const image = sharp(Buffer.from(pixels.data), { raw: { width, height, channels: channels as 1 | 2 | 3 | 4 } });
	return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 90 }).toBuffer();
}

/** The picture carrying `payload`, encoded as `format`. */
export async function markedImage(payload: Uint8Array, format: MarkedFormat, width = 640, height = 480): Promise<Buffer> {
	return encode(embedWatermark(await picture(width, height), payload), format);
}

/** The same picture, nobody's mark in it. */
export async function unmarkedImage(format: MarkedFormat, width = 640, height = 480): Promise<Buffer> {
	return encode(await picture(width, height), format);
}

/** A record written to `store` for `apiKeyId`, as the generation pipeline writes one. */
export async function writeRecord(store: ProvenanceRecordStore, apiKeyId: string, overrides: Partial<NewProvenanceRecord> = {}): Promise<NewProvenanceRecord> {
	const record: NewProvenanceRecord = {
		payload: newProvenancePayload(),
		generationId: `gen_${Math.random().toString(36).slice(2, 12)}`,
		model: 'p-image',
		apiKeyId,
		contentHash: 'cd'.repeat(32),
		createdAt: new Date(Math.floor(Date.now() / 1000) * 1000),
		...overrides,
	};
	expect(await store.create(record)).toBe(true);
	return record;
}
