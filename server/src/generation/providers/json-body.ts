/**
 * A JSON request body whose images go as base64 strings (WebUI's `init_images`, the data URIs of
 * `upstream` and Replicate): each image is written from its bytes as the body is sent, 48 KiB at a
 * time, so neither its base64 nor the whole body ever exists as one string; a 20 MB input image
 * was 27 MB of base64 and 27 MB more of JSON text. Its length is known before it is sent
 * (Content-Length, which some hosts require), and it can be sent again (a redirect, a retry).
 */
import { randomBytes } from 'node:crypto';
import { sniffMedia } from '../../../../core/media';

/** Bytes to be sent as a base64 string, after a prefix such as `data:image/png;base64,`. */
export class Base64Text {
	constructor(
		readonly bytes: Buffer,
		readonly prefix = '',
	) {}

	/** Its length in the body: the prefix and 4 characters for every 3 bytes, padded. */
	get length(): number {
		return Buffer.byteLength(this.prefix) + 4 * Math.ceil(this.bytes.length / 3);
	}
}

/** An image as a data URI of the type its bytes show, as hosts take inline inputs. */
export function dataUri(bytes: Buffer): Base64Text {
	return new Base64Text(bytes, `data:${sniffMedia(bytes)?.mimeType ?? 'application/octet-stream'};base64,`);
}

/** Bytes of an image encoded at once: a multiple of 3, so that each piece is whole base64 without padding. */
const ENCODED_BYTES = 48 * 1024;

export interface JsonBody {
	/** Bytes in all: its Content-Length. */
	length: number;
	/** The body from its start, each time it is called. */
	chunks(): Generator<Buffer>;
}

/** The value as JSON text; where it holds Base64Text, a body written piece by piece instead. */
export function jsonBody(value: unknown): string | JsonBody {
	const images: Base64Text[] = [];
	// Unguessable, so that no prompt can carry it: it marks where an image goes in the text.
	const marker = randomBytes(12).toString('hex');
	const text = JSON.stringify(value, (_key, each: unknown) => (each instanceof Base64Text ? `${marker}${images.push(each) - 1}` : each));
	if (images.length === 0) return text;
	// split with a capture group: text, image index, text, …, text.
	const parts = text.split(new RegExp(`${marker}(\\d+)`));
	const texts = parts.filter((_, index) => index % 2 === 0).map((part) => Buffer.from(part));
	const order = parts.filter((_, index) => index % 2 === 1).map((index) => images[Number(index)]!);
	return {
		length: texts.reduce((sum, part) => sum + part.length, 0) + order.reduce((sum, image) => sum + image.length, 0),
		*chunks() {
			for (const [index, part] of texts.entries()) {
				yield part;
				const image = order[index];
				if (!image) continue;
				if (image.prefix) yield Buffer.from(image.prefix);
				for (let start = 0; start < image.bytes.length; start += ENCODED_BYTES) {
					yield Buffer.from(image.bytes.toString('base64', start, start + ENCODED_BYTES), 'latin1');
				}
			}
		},
	};
}
