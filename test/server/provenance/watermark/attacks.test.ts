/**
 * What platforms do to an image, each on a few renders of different proportions: the mark is
 * still read with its payload. And what it does not survive (a crop, a rotation) is read as no
 * mark at all, never as a wrong payload.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import type { AspectRatio } from '../../../../core/models';
import { detectWatermark } from '../../../../server/src/provenance/watermark/detect';
import { detectWatermarkInImage } from '../../../../server/src/provenance/watermark/encoded-image';
import { embedWatermark } from '../../../../server/src/provenance/watermark/embed';
import { encoded, rawOf, sandboxRender } from './support/pictures';

type Attack = (served: Buffer, width: number) => Promise<Buffer>;

const SURVIVED: [string, Attack][] = [
	['metadata stripped (re-saved)', (served) => sharp(served).toBuffer()],
	['JPEG q75', (served) => sharp(served).jpeg({ quality: 75 }).toBuffer()],
	['WebP q80', (served) => sharp(served).webp({ quality: 80 }).toBuffer()],
	['resized to half', (served, width) => sharp(served).resize(Math.round(width / 2)).toBuffer()],
	['brightness +15 %', (served) => sharp(served).modulate({ brightness: 1.15 }).toBuffer()],
	['brightness −15 %', (served) => sharp(served).modulate({ brightness: 0.85 }).toBuffer()],
	['768 px + JPEG q80', (served) => sharp(served).resize(768, 768, { fit: 'inside' }).jpeg({ quality: 80 }).toBuffer()],
];

const NOT_SURVIVED: [string, Attack][] = [
	['crop 10 %', async (served) => {
		const { width = 0, height = 0 } = await sharp(served).metadata();
		return sharp(served).extract({ left: Math.round(width * 0.05), top: Math.round(height * 0.05), width: Math.round(width * 0.9), height: Math.round(height * 0.9) }).toBuffer();
	}],
	['rotation 90°', (served) => sharp(served).rotate(90).toBuffer()],
	['rotation 5°', (served) => sharp(served).rotate(5).toBuffer()],
];

const SERVED: [AspectRatio, 'png' | 'jpeg' | 'webp'][] = [
	['1:1', 'png'],
	['16:9', 'jpeg'],
	['1:3', 'webp'],
];

describe.each(SERVED)('%s served as %s', (aspectRatio, format) => {
	const payload = randomBytes(8);
	let served: Buffer;
	let width: number;

	beforeAll(async () => {
		const unmarked = await sandboxRender(aspectRatio, 21, 'Portrait of an old fisherman, soft window light', 'REALISTIC');
		width = unmarked.info.width;
		served = await encoded(embedWatermark(unmarked, payload)).toFormat(format, { quality: 90 }).toBuffer();
	});

	it('as served, read from the encoded file', async () => {
		expect(await detectWatermarkInImage(served)).toMatchObject({ found: true, payload: new Uint8Array(payload) });
	});

	it.each(SURVIVED)('%s: found, with its payload', async (_, attack) => {
		expect(detectWatermark(await rawOf(await attack(served, width)))).toMatchObject({ found: true, payload: new Uint8Array(payload) });
	});

	it.each(NOT_SURVIVED)('%s: not found (and no wrong payload)', async (_, attack) => {
		expect(detectWatermark(await rawOf(await attack(served, width)))).toEqual({ found: false, reason: 'not_found' });
	});
});
