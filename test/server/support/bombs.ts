/**
 * Image bombs for the tests and fuzzers: small files whose headers declare a huge picture. The PNG
 * is a real decompression bomb (every row deflates to almost nothing, so ~250 KB decode to
 * 16000 × 16000 px); the JPEG, WebP and GIF are small real images whose headers were edited to
 * declare huge dimensions, which is all a decoder trusts before it allocates.
 */
import { crc32, createDeflate } from 'node:zlib';
import sharp from 'sharp';

function chunk(type: string, data: Buffer): Buffer {
	const length = Buffer.alloc(4);
	length.writeUInt32BE(data.length);
	const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
	const crc = Buffer.alloc(4);
	crc.writeUInt32BE(crc32(typed));
	return Buffer.concat([length, typed, crc]);
}

/** A valid greyscale PNG of `width` × `height` px, all black: decodes to width × height bytes. */
export async function pngBomb(width = 16_000, height = 16_000): Promise<Buffer> {
	const deflate = createDeflate({ level: 9 });
	const compressed: Buffer[] = [];
	deflate.on('data', (data: Buffer) => compressed.push(data));
	const done = new Promise((resolve, reject) => deflate.on('end', resolve).on('error', reject));
	// Filter byte 0 and a row of zeros, fed row by row so the test never holds the decoded size.
	const row = Buffer.alloc(width + 1);
	for (let y = 0; y < height; y++) {
		if (!deflate.write(row)) await new Promise((resolve) => deflate.once('drain', resolve));
	}
	deflate.end();
	await done;
	const header = Buffer.alloc(13);
	header.writeUInt32BE(width, 0);
	header.writeUInt32BE(height, 4);
	header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale, deflate, adaptive filtering, no interlace
	return Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk('IHDR', header),
		chunk('IDAT', Buffer.concat(compressed)),
		chunk('IEND', Buffer.alloc(0)),
	]);
}

const small = (format: 'jpeg' | 'webp' | 'gif') =>
	sharp({ create: { width: 32, height: 24, channels: 3, background: '#3070c0' } })
		.toFormat(format)
		.toBuffer();

/** A 32 × 24 JPEG whose frame header (SOF) declares `width` × `height` (at most 65535 each). */
export async function jpegDeclaring(width = 60_000, height = 60_000): Promise<Buffer> {
	const bytes = await small('jpeg');
	for (let offset = 2; offset + 9 < bytes.length; ) {
		if (bytes[offset] !== 0xff) throw new Error('unexpected JPEG layout');
		const marker = bytes[offset + 1]!;
		if (marker >= 0xc0 && marker <= 0xc2) {
			bytes.writeUInt16BE(height, offset + 5);
			bytes.writeUInt16BE(width, offset + 7);
			return bytes;
		}
		offset += 2 + bytes.readUInt16BE(offset + 2);
	}
	throw new Error('no JPEG frame header found');
}

/** A 32 × 24 lossy WebP whose VP8 frame declares `width` × `height` (at most 16383 each). */
export async function webpDeclaring(width = 16_383, height = 16_383): Promise<Buffer> {
	const bytes = await small('webp');
	if (bytes.toString('latin1', 12, 16) !== 'VP8 ') throw new Error('expected a simple lossy WebP');
	// Chunk header (8) + frame tag (3) + start code (3), then 14-bit width and height.
	bytes.writeUInt16LE(width & 0x3fff, 26);
	bytes.writeUInt16LE(height & 0x3fff, 28);
	return bytes;
}

/** A 32 × 24 GIF whose logical screen declares `width` × `height` (at most 65535 each). */
export async function gifDeclaring(width = 65_535, height = 65_535): Promise<Buffer> {
	const bytes = await small('gif');
	bytes.writeUInt16LE(width, 6);
	bytes.writeUInt16LE(height, 8);
	return bytes;
}
