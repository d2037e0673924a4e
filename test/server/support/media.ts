/**
 * Small real test media: images encoded by sharp, and videos that are minimal but carry the real
 * container signatures (ISO BMFF `ftyp` boxes, an EBML header with DocType webm).
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';

export async function makeImage(
	format: 'png' | 'jpeg' | 'webp' | 'gif' | 'avif',
	width = 64,
	height = 48,
): Promise<Buffer> {
	const base = sharp({
		create: { width, height, channels: 4, background: { r: 200, g: 40, b: 90, alpha: 1 } },
	}).composite([
		{
			input: { create: { width: Math.ceil(width / 2), height: Math.ceil(height / 2), channels: 4, background: '#1050e0' } },
			top: 0,
			left: 0,
		},
	]);
	return base.toFormat(format).toBuffer();
}

function box(type: string, payload: Buffer): Buffer {
	const header = Buffer.alloc(8);
	header.writeUInt32BE(8 + payload.length, 0);
	header.write(type, 4, 'latin1');
	return Buffer.concat([header, payload]);
}

function ftyp(major: string, compatible: string[]): Buffer {
	const minor = Buffer.alloc(4);
	return box('ftyp', Buffer.concat([Buffer.from(major, 'latin1'), minor, ...compatible.map((brand) => Buffer.from(brand, 'latin1'))]));
}

/** `ftyp isom` + `free` + `mdat` with some payload. */
export function makeMp4(payloadBytes = 2048): Buffer {
	return Buffer.concat([ftyp('isom', ['isom', 'iso2', 'mp41']), box('free', Buffer.alloc(8)), box('mdat', patterned(payloadBytes))]);
}

/** QuickTime: `ftyp qt  ` + `wide` + `mdat`. */
export function makeMov(payloadBytes = 2048): Buffer {
	return Buffer.concat([ftyp('qt  ', ['qt  ']), box('wide', Buffer.alloc(0)), box('mdat', patterned(payloadBytes))]);
}

/** EBML header declaring DocType "webm", followed by a Segment element of patterned bytes. */
export function makeWebm(payloadBytes = 2048): Buffer {
	const docType = Buffer.concat([Buffer.from([0x42, 0x82, 0x84]), Buffer.from('webm', 'latin1')]);
	const version = Buffer.from([0x42, 0x87, 0x81, 0x04, 0x42, 0x85, 0x81, 0x02]);
	const ebmlBody = Buffer.concat([docType, version]);
	const header = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x80 | ebmlBody.length]), ebmlBody]);
	const segment = Buffer.concat([Buffer.from([0x18, 0x53, 0x80, 0x67, 0x01, 0, 0, 0, 0, 0, 0x08, 0x00]), patterned(payloadBytes)]);
	return Buffer.concat([header, segment]);
}

/** Bytes that are neither image nor video. */
export function makePdf(): Buffer {
	return Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1');
}

/** A PNG of random pixels, which compresses to nothing: about a byte a pixel for each channel. */
export async function noisyPng(width: number, height: number, channels: 1 | 3 = 3): Promise<Buffer> {
	return await sharp(randomBytes(width * height * channels), { raw: { width, height, channels } }).png().toBuffer();
}

export function patterned(length: number, seed = 7): Buffer {
	const bytes = Buffer.alloc(length);
	let state = seed;
	for (let i = 0; i < length; i++) {
		state = (state * 1103515245 + 12345) >>> 0;
		bytes[i] = state >>> 24;
	}
	return bytes;
}

/**
 * Whether two files hold the same picture, decoded: a provider's image we host is its bytes plus
 * our provenance marks, never re-encoded when it already fits.
 */
export async function samePixels(a: Buffer, b: Buffer): Promise<boolean> {
	const [left, right] = await Promise.all([sharp(a).raw().toBuffer(), sharp(b).raw().toBuffer()]);
	return left.equals(right);
}

/**
 * How far apart two files' pictures are, decoded: the peak signal-to-noise ratio in dB (Infinity
 * for the same pixels). Two generations of one request and seed differ only by their watermarks,
 * each invisible (≥ 38 dB from the unmarked picture): well above 30 dB apart, where two other
 * pictures are below 20 dB.
 */
export async function pictureDistance(a: Buffer, b: Buffer): Promise<number> {
	const [left, right] = await Promise.all([sharp(a).raw().toBuffer({ resolveWithObject: true }), sharp(b).raw().toBuffer({ resolveWithObject: true })]);
	if (left.info.width !== right.info.width || left.info.height !== right.info.height || left.data.length !== right.data.length) return 0;
	let squares = 0;
	for (let index = 0; index < left.data.length; index++) squares += (left.data[index]! - right.data[index]!) ** 2;
	const meanSquare = squares / left.data.length;
	return meanSquare === 0 ? Infinity : 10 * Math.log10((255 * 255) / meanSquare);
}
