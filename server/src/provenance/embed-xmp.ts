/**
 * Puts an XMP packet into PNG, JPEG and WebP bytes without decoding a pixel: a container edit,
 * where a re-encode through sharp decodes and encodes every pixel and changes the image. A
 * packet already there is replaced, so readers never see two that disagree.
 */
import { crc32 } from 'node:zlib';
import type { SniffedMedia } from '../../../core/media';

export function embedXmp(bytes: Buffer, media: SniffedMedia, xmp: string): Buffer {
	const packet = Buffer.from(xmp, 'utf8');
	switch (media.type) {
		case 'png':
			return embedInPng(bytes, packet);
		case 'jpeg':
			return embedInJpeg(bytes, packet);
		case 'webp':
			return embedInWebp(bytes, packet);
		default:
			return bytes;
	}
}

const PNG_SIGNATURE_BYTES = 8;
const PNG_XMP_KEYWORD = 'XML:com.adobe.xmp';
const PNG_TEXT_CHUNKS = new Set(['iTXt', 'tEXt', 'zTXt']);

function embedInPng(bytes: Buffer, packet: Buffer): Buffer {
	const parts: Buffer[] = [bytes.subarray(0, PNG_SIGNATURE_BYTES)];
	let offset = PNG_SIGNATURE_BYTES;
	while (offset + 12 <= bytes.length) {
		const length = bytes.readUInt32BE(offset);
		const end = offset + 12 + length;
		const type = bytes.toString('latin1', offset + 4, offset + 8);
		const chunk = bytes.subarray(offset, end);
		// Some writers (libvips among them) put the packet in a tEXt or zTXt chunk instead.
		const isXmp = PNG_TEXT_CHUNKS.has(type) && bytes.toString('latin1', offset + 8, offset + 8 + PNG_XMP_KEYWORD.length + 1) === `${PNG_XMP_KEYWORD}\0`;
		if (!isXmp) parts.push(chunk);
		// Right after the header, where readers that stop early still find it.
		if (type === 'IHDR') parts.push(pngChunk('iTXt', Buffer.concat([Buffer.from(`${PNG_XMP_KEYWORD}\0\0\0\0\0`, 'latin1'), packet])));
		offset = end;
	}
	parts.push(bytes.subarray(offset));
	return Buffer.concat(parts);
}

function pngChunk(type: string, data: Buffer): Buffer {
	const head = Buffer.alloc(8);
	head.writeUInt32BE(data.length, 0);
	head.write(type, 4, 'latin1');
	const crc = Buffer.alloc(4);
	crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))), 0);
	return Buffer.concat([head, data, crc]);
}

const JPEG_XMP_NAMESPACE = Buffer.from('http://ns.adobe.com/xap/1.0/\0', 'latin1');
const JPEG_SOS = 0xda;

function embedInJpeg(bytes: Buffer, packet: Buffer): Buffer {
	const segment = Buffer.alloc(4);
	segment.writeUInt16BE(0xffe1, 0);
	segment.writeUInt16BE(2 + JPEG_XMP_NAMESPACE.length + packet.length, 2);
	const xmpSegment = Buffer.concat([segment, JPEG_XMP_NAMESPACE, packet]);
	const parts: Buffer[] = [bytes.subarray(0, 2)];
	let offset = 2;
	let placed = false;
	// Markers up to the scan; the entropy-coded data after it is copied as it is.
	while (offset + 4 <= bytes.length && bytes[offset] === 0xff) {
		const marker = bytes[offset + 1]!;
		if (marker === JPEG_SOS) break;
		const end = offset + 2 + bytes.readUInt16BE(offset + 2);
		const isApp0OrApp1 = marker === 0xe0 || marker === 0xe1;
		if (!placed && !isApp0OrApp1) {
			// After JFIF and Exif, as the XMP specification places it.
			parts.push(xmpSegment);
			placed = true;
		}
		const isXmp = marker === 0xe1 && bytes.subarray(offset + 4, offset + 4 + JPEG_XMP_NAMESPACE.length).equals(JPEG_XMP_NAMESPACE);
		if (!isXmp) parts.push(bytes.subarray(offset, end));
		offset = end;
	}
	if (!placed) parts.push(xmpSegment);
	parts.push(bytes.subarray(offset));
	return Buffer.concat(parts);
}

const RIFF_HEADER_BYTES = 12;
const VP8X_XMP_FLAG = 0x04;
const VP8X_ALPHA_FLAG = 0x10;

function embedInWebp(bytes: Buffer, packet: Buffer): Buffer {
	const chunks: { type: string; data: Buffer }[] = [];
	for (let offset = RIFF_HEADER_BYTES; offset + 8 <= bytes.length; ) {
		const size = bytes.readUInt32LE(offset + 4);
		chunks.push({ type: bytes.toString('latin1', offset, offset + 4), data: bytes.subarray(offset + 8, offset + 8 + size) });
		offset += 8 + size + (size % 2);
	}
	const kept = chunks.filter((chunk) => chunk.type !== 'XMP ');
	// The simple formats (one VP8 or VP8L chunk) carry no metadata: they become the extended one.
	const first = kept[0];
	if (first && first.type !== 'VP8X') kept.unshift({ type: 'VP8X', data: extendedHeader(first, kept) });
	const header = Buffer.from(kept[0]!.data);
	header[0] = header[0]! | VP8X_XMP_FLAG;
	kept[0] = { type: 'VP8X', data: header };
	kept.push({ type: 'XMP ', data: packet });
	const body = Buffer.concat(kept.map(riffChunk));
	const riff = Buffer.alloc(RIFF_HEADER_BYTES);
	riff.write('RIFF', 0, 'latin1');
	riff.writeUInt32LE(4 + body.length, 4);
	riff.write('WEBP', 8, 'latin1');
	return Buffer.concat([riff, body]);
}

function extendedHeader(image: { type: string; data: Buffer }, chunks: { type: string }[]): Buffer {
	let width: number;
	let height: number;
	let alpha = chunks.some((chunk) => chunk.type === 'ALPH');
	if (image.type === 'VP8L') {
		const bits = image.data.readUInt32LE(1);
		width = (bits & 0x3fff) + 1;
		height = ((bits >>> 14) & 0x3fff) + 1;
		alpha ||= ((bits >>> 28) & 1) === 1;
	} else {
		width = image.data.readUInt16LE(6) & 0x3fff;
		height = image.data.readUInt16LE(8) & 0x3fff;
	}
	const header = Buffer.alloc(10);
	header[0] = alpha ? VP8X_ALPHA_FLAG : 0;
	header.writeUIntLE(width - 1, 4, 3);
	header.writeUIntLE(height - 1, 7, 3);
	return header;
}

function riffChunk(chunk: { type: string; data: Buffer }): Buffer {
	const head = Buffer.alloc(8);
	head.write(chunk.type, 0, 'latin1');
	head.writeUInt32LE(chunk.data.length, 4);
	return Buffer.concat(chunk.data.length % 2 ? [head, chunk.data, Buffer.alloc(1)] : [head, chunk.data]);
}
