/**
 * Marking and reading back: every catalog proportion carries its payload, invisibly (PSNR ≥ 38 dB
 * against the same render unmarked), in colour, grey and with alpha, and a copy is made unless the
 * caller asks for the pixels themselves to be marked.
 */
import { randomBytes } from 'node:crypto';
import { EXTENDED_ASPECT_RATIOS } from '../../../../core/models';
import { detectWatermark, WATERMARK_ALGORITHM } from '../../../../server/src/provenance/watermark/detect';
import { embedWatermark, embedWatermarkInPlace } from '../../../../server/src/provenance/watermark/embed';
import type { RawImage } from '../../../../server/src/provenance/watermark/raw-image';
import { encoded, psnr, rawOf, sandboxRender } from './support/pictures';

it.each(EXTENDED_ASPECT_RATIOS)('%s: the payload read back from the marked pixels, PSNR ≥ 38 dB', async (aspectRatio) => {
	const unmarked = await sandboxRender(aspectRatio, 7);
	const payload = randomBytes(8);
	const marked = embedWatermark(unmarked, payload);
	expect(marked.info).toEqual(unmarked.info);
	expect(psnr(unmarked.data, marked.data)).toBeGreaterThanOrEqual(38);
	const reading = detectWatermark(marked);
	expect(reading).toEqual({ found: true, algorithm: WATERMARK_ALGORITHM, payload: new Uint8Array(payload), confidence: 1 });
	expect(detectWatermark(unmarked)).toEqual({ found: false, reason: 'not_found' });
});

it('leaves the pixels it was given alone; embedWatermarkInPlace marks them, the same way', async () => {
	const unmarked = await sandboxRender('4:3', 3);
	const original = Buffer.from(unmarked.data);
	const payload = randomBytes(8);
	const copy = embedWatermark(unmarked, payload);
	expect(Buffer.from(unmarked.data).equals(original)).toBe(true);
	embedWatermarkInPlace(unmarked, payload);
	expect(Buffer.from(unmarked.data).equals(Buffer.from(copy.data))).toBe(true);
});

function withChannels(image: RawImage, channels: 1 | 2 | 4): RawImage {
	const { width, height } = image.info;
	const data = Buffer.alloc(width * height * channels);
	for (let p = 0; p < width * height; p++) {
		const at = channels * p;
		if (channels === 4) data.set(image.data.subarray(3 * p, 3 * p + 3), at);
		else data[at] = image.data[3 * p + 1]!;
		if (channels !== 1) data[at + channels - 1] = (p * 7) % 256;
	}
	return { data, info: { width, height, channels } };
}

it.each([
	['grey', 1],
	['grey and alpha', 2],
	['RGBA', 4],
] as const)('%s: marked and read back; alpha untouched', async (_, channels) => {
	const image = withChannels(await sandboxRender('1:1', 11), channels);
	const payload = randomBytes(8);
	const marked = embedWatermark(image, payload);
	expect(detectWatermark(marked)).toMatchObject({ found: true, payload: new Uint8Array(payload) });
	if (channels % 2 === 0) {
		for (let p = channels - 1; p < image.data.length; p += channels) if (marked.data[p] !== image.data[p]) throw new Error(`alpha changed at sample ${p}`);
	}
});

it('a larger image (2048 px) is marked on the same grid and read at its own size and at 1024 px', async () => {
	const large = await rawOf(await encoded(await sandboxRender('16:9', 5)).resize(2048).png().toBuffer());
	const payload = randomBytes(8);
	const marked = embedWatermark(large, payload);
	expect(detectWatermark(marked)).toMatchObject({ found: true, payload: new Uint8Array(payload) });
	const smaller = await rawOf(await encoded(marked).resize(1024).png().toBuffer());
	expect(detectWatermark(smaller)).toMatchObject({ found: true, payload: new Uint8Array(payload) });
});

it('a picture where few coefficients can carry the mark: no sample moves by more than 43 levels, PSNR ≥ 40 dB', async () => {
	// Black and white cells of one grid sample each, but for a flat band: nearly every coefficient
	// is beyond the limit, so each bit has few to push. A coefficient is pushed at most to 1.5 × the
	// limit (12.5 levels from where it was, × 1.15); a block's twelve add up to 43 at most.
	const { width, height } = { width: 1024, height: 1024 };
	const cells = { data: Buffer.alloc(width * height * 3, 128), info: { width, height, channels: 3 } };
	for (let y = 100; y < height; y++) {
		for (let x = 0, p = 3 * y * width; x < width; x++, p += 3) cells.data[p] = cells.data[p + 1] = cells.data[p + 2] = ((((y >> 2) * 256 + (x >> 2)) * 2654435761) >>> 31) === 1 ? 230 : 25;
	}
	for (const image of [cells, await sandboxRender('16:9', 13, 'Minimalist poster: SUMMER SALE 50% OFF', 'DESIGN')]) {
		const payload = randomBytes(8);
		const marked = embedWatermark(image, payload);
		let largest = 0;
		for (let i = 0; i < image.data.length; i++) largest = Math.max(largest, Math.abs(marked.data[i]! - image.data[i]!));
		expect(largest).toBeLessThanOrEqual(43);
		expect(psnr(image.data, marked.data)).toBeGreaterThanOrEqual(40);
		expect(detectWatermark(marked)).toMatchObject({ found: true, payload: new Uint8Array(payload) });
	}
});
