/**
 * What the mark carries: an 8-byte payload (the name of a provenance record) and its CRC-32, 96
 * message bits, coded into 204 code bits. The check is what makes "found" trustworthy: a picture
 * nobody marked decodes to some message too, and its check matches by chance once in 2^32.
 */
import { crc32 } from 'node:zlib';
import { codeLength, decode, encode } from './convolutional-code';

export const PAYLOAD_BYTES = 8;
const CHECK_BYTES = 4;
const MESSAGE_BITS = (PAYLOAD_BYTES + CHECK_BYTES) * 8;
export const CODE_BITS = codeLength(MESSAGE_BITS);

/** Bytes → bits, the most significant bit of each byte first. */
function bitsOf(bytes: Uint8Array): Uint8Array {
	const bits = new Uint8Array(bytes.length * 8);
	for (let i = 0; i < bits.length; i++) bits[i] = (bytes[i >> 3]! >> (7 - (i & 7))) & 1;
	return bits;
}

function bytesOf(bits: Uint8Array): Uint8Array {
	const bytes = new Uint8Array(bits.length / 8);
	for (let i = 0; i < bits.length; i++) bytes[i >> 3]! |= bits[i]! << (7 - (i & 7));
	return bytes;
}

function withCheck(payload: Uint8Array): Uint8Array {
	const message = new Uint8Array(PAYLOAD_BYTES + CHECK_BYTES);
	message.set(payload);
	new DataView(message.buffer).setUint32(PAYLOAD_BYTES, crc32(payload));
	return message;
}

/** A RangeError naming the field unless `payload` is PAYLOAD_BYTES bytes. */
export function checkPayload(payload: Uint8Array, field = 'payload'): void {
	if (!(payload instanceof Uint8Array) || payload.length !== PAYLOAD_BYTES) {
		const length = payload instanceof Uint8Array ? `${payload.length} bytes` : typeof payload;
		throw new RangeError(`${field} must be ${PAYLOAD_BYTES} bytes (a Uint8Array or Buffer), not ${length}`);
	}
}

/** The code bits (±1) that carry `payload`. */
export function codeBitsFor(payload: Uint8Array): Int8Array {
	return encode(bitsOf(withCheck(payload)));
}

export interface DecodedPayload {
	payload: Uint8Array;
	/** Of the code bits, the share read with the sign the decoded payload's code has (0.5: chance, 1: every one). */
	bitAgreement: number;
}

/** The payload the readings carry, or undefined when the best-fitting message fails its check. */
export function decodePayload(readings: Float32Array): DecodedPayload | undefined {
	const message = bytesOf(decode(readings, MESSAGE_BITS));
	const payload = message.slice(0, PAYLOAD_BYTES);
	const check = new DataView(message.buffer).getUint32(PAYLOAD_BYTES);
	if (check !== crc32(payload)) return undefined;
	const code = codeBitsFor(payload);
	let agreeing = 0;
	for (let i = 0; i < code.length; i++) if (code[i]! * readings[i]! > 0) agreeing++;
	return { payload, bitAgreement: agreeing / code.length };
}
