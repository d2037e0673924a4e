/**
 * Pictures for the watermark's suites: sandbox renders at the catalog's sizes (what the service
 * marks), and pictures nobody marked, of the kinds a check meets (noise, gradients, flat colour,
 * text on a screen), all as raw pixels.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { dimensionsFor, type AspectRatio, type StyleType } from '../../../../../core/models';
import { renderSandboxImage } from '../../../../../server/src/generation/providers/sandbox-render';
import type { ImageTask } from '../../../../../server/src/media/image-work';
import type { RawImage } from '../../../../../server/src/provenance/watermark/raw-image';

const task: ImageTask = { signal: new AbortController().signal, limitInputPixels: 1e8, timeoutSeconds: () => 60, throwIfStopped() {} };

export async function rawOf(bytes: Buffer): Promise<RawImage> {
	const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
	return { data, info: { width: info.width, height: info.height, channels: info.channels } };
}

export function encoded(image: RawImage): sharp.Sharp {
	return sharp(image.data, { raw: image.info as sharp.CreateRaw });
}

export async function sandboxRender(aspectRatio: AspectRatio, seed: number, prompt = 'A lighthouse at dawn over a calm sea', styleType: StyleType = 'AUTO'): Promise<RawImage> {
	const scene = { model: 'p-image', prompt, ...dimensionsFor(aspectRatio), styleType, seed, inputs: [] };
	return rawOf(await renderSandboxImage(scene, 'png', task));
}

/** PSNR over every colour sample, in dB. */
export function psnr(a: Uint8Array, b: Uint8Array): number {
	let squares = 0;
	for (let i = 0; i < a.length; i++) squares += (a[i]! - b[i]!) ** 2;
	return 10 * Math.log10((255 * 255 * a.length) / squares);
}

/** Picture number `i` of a set nobody marked: noise, gradients, flat colours and text screens in turn, of varied sizes. */
export async function unmarkedPicture(i: number): Promise<RawImage> {
	const width = 256 + ((i * 131) % 500);
	const height = 256 + ((i * 71) % 400);
	const colour = (k: number) => `hsl(${(i * 47 + k * 120) % 360}, ${30 + (i % 60)}%, ${20 + ((i * 7) % 60)}%)`;
	const svg = (body: string) => sharp(Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${body}</svg>`)).removeAlpha();
	switch (i % 4) {
		case 0:
			return rawOf(await sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).png().toBuffer());
		case 1:
			return rawOf(await svg(`<defs><linearGradient id="g" x2="${(i % 5) / 4}" y2="1"><stop offset="0" stop-color="${colour(0)}"/><stop offset="1" stop-color="${colour(1)}"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/>`).png().toBuffer());
		case 2:
			return rawOf(await sharp({ create: { width, height, channels: 3, background: colour(2) } }).png().toBuffer());
		default: {
			const lines = Array.from({ length: Math.floor(height / 20) }, (_, line) => `<text x="8" y="${(line + 1) * 20}" font-family="DejaVu Sans Mono" font-size="13">const row${line} = value(${line * i}); // lorem ipsum dolor sit amet</text>`);
			return rawOf(await svg(`<rect width="100%" height="100%" fill="#fff"/>${lines.join('')}`).png().toBuffer());
		}
	}
}
