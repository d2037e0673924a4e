/**
 * What cannot be marked or read says so: a RangeError naming the field for pixels that are not a
 * raw image, a payload of the wrong length and an image too small or too narrow to carry the mark;
 * reading an image too small to have carried one is `found: false` (`too_small`) by design, since
 * anyone may ask about any image; bytes that are no image are a RangeError naming `image`.
 */
import { randomBytes } from 'node:crypto';
import { canCarryWatermark } from '../../../../server/src/provenance/watermark/canonical-grid';
import { detectWatermark } from '../../../../server/src/provenance/watermark/detect';
import { detectWatermarkInImage } from '../../../../server/src/provenance/watermark/encoded-image';
import { embedWatermark } from '../../../../server/src/provenance/watermark/embed';
import type { RawImage } from '../../../../server/src/provenance/watermark/raw-image';

const blank = (width: number, height: number, channels = 3): RawImage => ({ data: Buffer.alloc(width * height * channels, 128), info: { width, height, channels } });

it.each([
	['a data length that does not match', { data: Buffer.alloc(10), info: { width: 300, height: 300, channels: 3 } }, /pixels\.data holds 10 bytes; 300 × 300 × 3/],
	['five channels', { data: Buffer.alloc(300 * 300 * 5), info: { width: 300, height: 300, channels: 5 } }, /pixels\.info\.channels must be 1 to 4/],
	['a width of zero', { data: Buffer.alloc(0), info: { width: 0, height: 300, channels: 3 } }, /pixels\.info\.width must be a positive whole number/],
	['a fractional height', { data: Buffer.alloc(0), info: { width: 300, height: 1.5, channels: 3 } }, /pixels\.info\.height must be a positive whole number/],
])('pixels with %s: a RangeError naming the field, when marking and when reading', (_, pixels, message) => {
	expect(() => embedWatermark(pixels, randomBytes(8))).toThrow(message);
	expect(() => detectWatermark(pixels)).toThrow(RangeError);
	expect(() => detectWatermark(pixels)).toThrow(message);
});

it.each([
	['7 bytes', randomBytes(7), /payload must be 8 bytes \(a Uint8Array or Buffer\), not 7 bytes/],
	['9 bytes', randomBytes(9), /payload must be 8 bytes/],
	['a string', 'record-1' as unknown as Uint8Array, /payload must be 8 bytes \(a Uint8Array or Buffer\), not string/],
])('a payload of %s: a RangeError naming it', (_, payload, message) => {
	expect(() => embedWatermark(blank(512, 512), payload)).toThrow(message);
});

it.each([
	['255 px on its long side', blank(255, 200), /a 255 × 200 image is too small to carry a watermark \(at least 256 × 200 px/],
	['a long side of 256 px but a short side under its grid', blank(190, 256), /a 190 × 256 image is too small to carry a watermark \(at least 192 × 256 px/],
	['beyond 8:1', blank(2000, 200), /a 2000 × 200 image is too narrow to carry a watermark \(at most 8:1\)/],
])('an image %s cannot be marked: a RangeError naming pixels, and canCarryWatermark says so first', (_, pixels, message) => {
	expect(() => embedWatermark(pixels, randomBytes(8))).toThrow(message);
	expect(canCarryWatermark(pixels.info.width, pixels.info.height)).toBe(false);
});

it.each([
	['of 255 × 255', blank(255, 255)],
	['of 1 × 1', blank(1, 1)],
	['beyond 8:1', blank(2000, 200)],
])('reading an image %s: found false, too small', (_, pixels) => {
	expect(detectWatermark(pixels)).toEqual({ found: false, reason: 'too_small' });
});

it('the smallest image that can be marked (256 × 256) is marked and read', () => {
	const payload = randomBytes(8);
	const pixels = blank(256, 256);
	expect(canCarryWatermark(256, 256)).toBe(true);
	for (let i = 0; i < pixels.data.length; i++) pixels.data[i] = (i * 31) % 200;
	expect(detectWatermark(embedWatermark(pixels, payload))).toMatchObject({ found: true, payload: new Uint8Array(payload) });
});

it('bytes that are no image: a RangeError naming image', async () => {
	await expect(detectWatermarkInImage(Buffer.from('%PDF-1.4 not a picture'))).rejects.toThrow(/^image could not be decoded: /);
	await expect(detectWatermarkInImage(Buffer.from('%PDF-1.4 not a picture'))).rejects.toBeInstanceOf(RangeError);
});

it('an image over the pixel limit given is not decoded', async () => {
	const { default: sharp } = await import('sharp');
	const png = await sharp({ create: { width: 600, height: 600, channels: 3, background: '#888' } }).png().toBuffer();
	await expect(detectWatermarkInImage(png, { limitInputPixels: 100_000 })).rejects.toThrow(/^image could not be decoded: .*pixel limit/);
});
