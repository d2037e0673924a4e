import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { sniffMedia } from '../../../core/media';
import { fitImage, scaledToSide } from '../../../server/src/media/fit-image';
import { rejectedImageGenError } from '../../helpers/image-gen-error';

/** A photo-like picture: a gradient under grain, so encoders have real detail to spend bytes on. */
async function makePhoto(width: number, height: number, grain: number, format: 'png' | 'jpeg' = 'png'): Promise<Buffer> {
	const gradient = Buffer.from(
		`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><linearGradient id="g" x2="1" y2="1"><stop offset="0" stop-color="#d04020"/><stop offset="1" stop-color="#2040d0"/></linearGradient><rect width="100%" height="100%" fill="url(#g)"/></svg>`,
	);
	const noise = await sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: grain } } })
		.raw()
		.toBuffer();
	return sharp(gradient)
		.composite([{ input: noise, raw: { width, height, channels: 3 }, blend: 'overlay' }])
		.removeAlpha()
		.toFormat(format)
		.toBuffer();
}

async function dimensions(data: Buffer): Promise<{ width: number; height: number; format: string }> {
	const metadata = await sharp(data).metadata();
	return { width: metadata.width, height: metadata.height, format: metadata.format };
}

describe('fitImage', () => {
	let large: Buffer;

	beforeAll(async () => {
		large = await makePhoto(3000, 2000, 60);
	});

	it('turns a large PNG into a JPEG within max_bytes and max_side', async () => {
		expect(large.length).toBeGreaterThan(5_000_000);
		const fitted = await fitImage(large, { maxSide: 1440, maxBytes: 300_000, format: 'jpeg', field: 'file' });
		expect(fitted.data.length).toBeLessThanOrEqual(300_000);
		expect(sniffMedia(fitted.data)?.type).toBe('jpeg');
		expect(fitted.media).toMatchObject({ mimeType: 'image/jpeg', extension: 'jpg' });
		expect(fitted.reencoded).toBe(true);
		expect(await dimensions(fitted.data)).toEqual({ width: fitted.width, height: fitted.height, format: 'jpeg' });
		expect(Math.max(fitted.width, fitted.height)).toBeLessThanOrEqual(1440);
		expect(fitted.width / fitted.height).toBeCloseTo(1.5, 2);
	});

	it('scales further down when the lowest quality is still too large', async () => {
		const fitted = await fitImage(large, { maxSide: 3000, maxBytes: 60_000, format: 'jpeg', field: 'file' });
		expect(fitted.data.length).toBeLessThanOrEqual(60_000);
		// The size search keeps as many pixels as the limit allows rather than overshooting.
		expect(fitted.data.length).toBeGreaterThan(40_000);
		expect(fitted.width).toBeLessThan(3000);
		expect(Math.abs(fitted.height - Math.round((fitted.width * 2) / 3))).toBeLessThanOrEqual(1);
		expect(await dimensions(fitted.data)).toMatchObject({ width: fitted.width, height: fitted.height });
	});

	it('writes WebP when asked, within the limits', async () => {
		const fitted = await fitImage(large, { maxSide: 1080, maxBytes: 100_000, format: 'webp', field: 'image' });
		expect(sniffMedia(fitted.data)?.type).toBe('webp');
		expect(fitted.media.mimeType).toBe('image/webp');
		expect(fitted.data.length).toBeLessThanOrEqual(100_000);
		expect(await dimensions(fitted.data)).toEqual({ width: fitted.width, height: fitted.height, format: 'webp' });
		expect(fitted.width).toBeLessThanOrEqual(1080);
	});

	it('never scales up', async () => {
		const small = await makePhoto(200, 120, 20);
		const fitted = await fitImage(small, { maxSide: 4000, format: 'jpeg', field: 'file' });
		expect(await dimensions(fitted.data)).toEqual({ width: 200, height: 120, format: 'jpeg' });
	});

	it.each([
		[1001, 333, 500],
		[333, 1001, 500],
		[640, 640, 17],
		[4000, 3, 100],
		[1919, 1080, 1280],
	])('keeps the ratio of %i×%i within a pixel at max_side %i', async (width, height, maxSide) => {
		const input = await makePhoto(width, height, 10, 'jpeg');
		const fitted = await fitImage(input, { maxSide, format: 'jpeg', field: 'file' });
		const actual = await dimensions(fitted.data);
		expect(actual).toEqual({ width: fitted.width, height: fitted.height, format: 'jpeg' });
		expect(Math.max(actual.width, actual.height)).toBe(maxSide);
		const scale = maxSide / Math.max(width, height);
		expect(Math.abs(actual.width - width * scale)).toBeLessThanOrEqual(1);
		expect(Math.abs(actual.height - height * scale)).toBeLessThanOrEqual(1);
		expect(Math.min(actual.width, actual.height)).toBeGreaterThanOrEqual(1);
	});

	it('answers a PNG that cannot fit with a 400 naming max_bytes and what was reached', async () => {
		const noisy = await makePhoto(300, 300, 255);
		const error = await rejectedImageGenError(fitImage(noisy, { maxBytes: 10_240, format: 'png', field: 'file' }));
		expect(error.status).toBe(400);
		expect(error.param).toBe('max_bytes');
		expect(error.code).toBe('cannot_fit');
		expect(error.message).toMatch(/10240 bytes/);
		expect(error.message).toMatch(/best reached was \d+ bytes at 300×300/);
	});

	it('shrinks a PNG by compression and palette when that is enough', async () => {
		const flat = await sharp({ create: { width: 800, height: 600, channels: 3, background: '#3366cc' } })
			.png({ compressionLevel: 0 })
			.toBuffer();
		const fitted = await fitImage(flat, { maxBytes: 20_000, format: 'png', field: 'file' });
		expect(flat.length).toBeGreaterThan(20_000);
		expect(fitted.data.length).toBeLessThanOrEqual(20_000);
		expect(await dimensions(fitted.data)).toEqual({ width: 800, height: 600, format: 'png' });
	});

	it('answers a lossy target that cannot fit with a 400 naming max_bytes', async () => {
		const error = await rejectedImageGenError(fitImage(await makePhoto(600, 400, 60), { maxBytes: 200, format: 'jpeg', field: 'file' }));
		expect(error.param).toBe('max_bytes');
		expect(error.message).toMatch(/quality 40/);
	});

	it('honours the EXIF orientation: the stored image is upright', async () => {
		// Stored 200×100, left half red and right half blue; orientation 6 shows it turned clockwise.
		const sideways = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#0000ff' } })
			.composite([{ input: { create: { width: 100, height: 100, channels: 3, background: '#ff0000' } }, left: 0, top: 0 }])
			.jpeg({ quality: 95 })
			.withMetadata({ orientation: 6 })
			.toBuffer();
		expect((await sharp(sideways).metadata()).orientation).toBe(6);

		const fitted = await fitImage(sideways, { maxSide: 100, format: 'jpeg', field: 'file' });
		expect(fitted).toMatchObject({ width: 50, height: 100 });
		const decoded = await sharp(fitted.data).raw().toBuffer({ resolveWithObject: true });
		expect(decoded.info).toMatchObject({ width: 50, height: 100 });
		expect((await sharp(fitted.data).metadata()).orientation ?? 1).toBe(1);
		const pixel = (x: number, y: number) => [...decoded.data.subarray((y * 50 + x) * 3, (y * 50 + x) * 3 + 3)];
		const [topRed, , topBlue] = pixel(25, 10);
		const [bottomRed, , bottomBlue] = pixel(25, 90);
		expect(topRed).toBeGreaterThan(200);
		expect(topBlue).toBeLessThan(60);
		expect(bottomBlue).toBeGreaterThan(200);
		expect(bottomRed).toBeLessThan(60);
	});

	it('rotates even when nothing else has to change', async () => {
		const sideways = await sharp({ create: { width: 60, height: 30, channels: 3, background: '#808080' } })
			.jpeg()
			.withMetadata({ orientation: 8 })
			.toBuffer();
		const fitted = await fitImage(sideways, { maxSide: 1000, format: 'jpeg', field: 'file' });
		expect(fitted.reencoded).toBe(true);
		expect(await dimensions(fitted.data)).toEqual({ width: 30, height: 60, format: 'jpeg' });
	});

	it('answers an image that already fits byte for byte', async () => {
		const jpeg = await makePhoto(300, 200, 30, 'jpeg');
		const fitted = await fitImage(jpeg, { maxSide: 300, maxBytes: jpeg.length, format: 'jpeg', field: 'file' });
		expect(fitted.reencoded).toBe(false);
		expect(fitted.data.equals(jpeg)).toBe(true);
		expect(fitted).toMatchObject({ width: 300, height: 200 });
	});

	it('converts when the format differs even if the size fits', async () => {
		const png = await makePhoto(100, 80, 30);
		const fitted = await fitImage(png, { maxSide: 1000, maxBytes: 10_000_000, format: 'webp', field: 'file' });
		expect(sniffMedia(fitted.data)?.type).toBe('webp');
	});

	it('reads from bytes and from a file path (libvips reads the file itself)', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'fit-image-'));
		try {
			const png = await makePhoto(400, 300, 30);
			const path = join(dir, 'in.png');
			await writeFile(path, png);
			const fromPath = await fitImage(path, { maxSide: 200, format: 'jpeg', field: 'file' });
			const fromBytes = await fitImage(png, { maxSide: 200, format: 'jpeg', field: 'file' });
			expect(fromPath).toMatchObject({ width: 200, height: 150 });
			expect(fromBytes.data.equals(fromPath.data)).toBe(true);
			// Already fitting: the file is the answer, never read into memory.
			const untouched = await fitImage(path, { maxSide: 400, format: 'png', field: 'file' });
			expect(untouched).toMatchObject({ reencoded: false, width: 400, height: 300 });
			expect(untouched.data.length).toBe(0);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	it('names the field when the image cannot be decoded', async () => {
		const png = await makePhoto(100, 100, 30);
		const error = await rejectedImageGenError(fitImage(png.subarray(0, 200), { maxSide: 50, format: 'jpeg', field: 'image' }));
		expect(error.param).toBe('image');
		expect(error.code).toBe('undecodable_image');
		const garbage = await rejectedImageGenError(fitImage(Buffer.from('not an image at all'), { maxSide: 50, format: 'jpeg', field: 'file' }));
		expect(garbage.param).toBe('file');
	});

	it('keeps an animation when the target format can hold one, scaling every frame', async () => {
		const frames = await Promise.all(
			['#ff0000', '#00ff00', '#0000ff'].map((background) =>
				sharp({ create: { width: 120, height: 80, channels: 3, background } }).png().toBuffer(),
			),
		);
		const gif = await sharp(frames, { join: { animated: true } }).gif().toBuffer();
		expect((await sharp(gif).metadata()).pages).toBe(3);

		const fitted = await fitImage(gif, { maxSide: 60, format: 'webp', field: 'file' });
		expect(fitted).toMatchObject({ width: 60, height: 40 });
		const metadata = await sharp(fitted.data, { animated: true }).metadata();
		expect(metadata).toMatchObject({ format: 'webp', pages: 3, width: 60, pageHeight: 40 });

		const still = await fitImage(gif, { maxSide: 60, format: 'jpeg', field: 'file' });
		expect(await dimensions(still.data)).toEqual({ width: 60, height: 40, format: 'jpeg' });
	});

	it('flattens transparency onto white for JPEG', async () => {
		const transparent = await sharp({ create: { width: 20, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
			.png()
			.toBuffer();
		const fitted = await fitImage(transparent, { maxSide: 20, format: 'jpeg', field: 'file' });
		const { data } = await sharp(fitted.data).raw().toBuffer({ resolveWithObject: true });
		expect(Math.min(...data)).toBeGreaterThan(240);
	});
});

describe('scaledToSide', () => {
	it('keeps sizes that fit and never answers a zero side', () => {
		expect(scaledToSide(100, 50, undefined)).toEqual({ width: 100, height: 50 });
		expect(scaledToSide(100, 50, 100)).toEqual({ width: 100, height: 50 });
		expect(scaledToSide(10_000, 1, 16)).toEqual({ width: 16, height: 1 });
		expect(scaledToSide(1, 10_000, 16)).toEqual({ width: 1, height: 16 });
	});
});
