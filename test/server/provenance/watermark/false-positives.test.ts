/**
 * Pictures nobody marked are never read as marked: 200 of them (noise, gradients, flat colours,
 * text screens, and sandbox renders), and the same after the changes that the marked ones survive.
 * Without the payload's CRC-32 matching, nothing is "found" (see payload-code.ts).
 */
import sharp from 'sharp';
import { EXTENDED_ASPECT_RATIOS } from '../../../../core/models';
import { detectWatermark } from '../../../../server/src/provenance/watermark/detect';
import { encoded, rawOf, sandboxRender, unmarkedPicture } from './support/pictures';

it('200 pictures nobody marked: none found', async () => {
	const found: number[] = [];
	for (let i = 0; i < 180; i++) if (detectWatermark(await unmarkedPicture(i)).found) found.push(i);
	for (let i = 0; i < 20; i++) {
		const render = await sandboxRender(EXTENDED_ASPECT_RATIOS[i % EXTENDED_ASPECT_RATIOS.length]!, 500 + i, `An unmarked picture, number ${i}`);
		if (detectWatermark(render).found) found.push(1000 + i);
	}
	expect(found).toEqual([]);
});

it('unmarked renders, re-encoded and resized as the marked ones are: none found', async () => {
	for (let i = 0; i < 6; i++) {
		const render = await sandboxRender(EXTENDED_ASPECT_RATIOS[i]!, 900 + i);
		for (const changed of [encoded(render).jpeg({ quality: 75 }), encoded(render).webp({ quality: 80 }), encoded(render).resize(Math.round(render.info.width / 2)).png()]) {
			expect(detectWatermark(await rawOf(await changed.toBuffer())).found).toBe(false);
		}
	}
	expect(detectWatermark(await rawOf(await sharp({ create: { width: 600, height: 400, channels: 3, background: '#000' } }).png().toBuffer())).found).toBe(false);
});
