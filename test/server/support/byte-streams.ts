/** Sources for storage writes: whole buffers in chunks, and sources that fail or stall midway. */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

const CHUNK = 64 * 1024;

/** The bytes in chunks, as a request body arrives. */
export function chunked(bytes: Buffer, chunkSize = CHUNK): Readable {
	return Readable.from(
		(function* () {
			for (let offset = 0; offset < bytes.length; offset += chunkSize) yield bytes.subarray(offset, offset + chunkSize);
		})(),
	);
}

/** Sends `bytes`, then fails with `error` (a client that disconnects, a disk that fails). */
export function failingAfter(bytes: Buffer, error: Error): Readable {
	return Readable.from(
		(async function* () {
			yield* chunked(bytes);
			throw error;
		})(),
	);
}

export interface StalledSource {
	stream: Readable;
	/** Resolves once every byte before the stall has been read by the consumer. */
	drained: Promise<void>;
}

/** Sends `bytes`, then sends nothing more and never ends (a client gone quiet). */
export function stallingAfter(bytes: Buffer, chunkSize = CHUNK): StalledSource {
	let markDrained!: () => void;
	const drained = new Promise<void>((resolve) => (markDrained = resolve));
	let offset = 0;
	// A plain read() rather than an async generator: a generator parked in an await cannot be
	// stopped, and this stream must close like a real one when destroyed.
	const stream = new Readable({
		highWaterMark: chunkSize,
		read() {
			if (offset >= bytes.length) return markDrained();
			this.push(bytes.subarray(offset, offset + chunkSize));
			offset += chunkSize;
		},
	});
	return { stream, drained };
}

/** Bytes that differ from position to position, so a misplaced part or range shows. */
export function patterned(length: number, seed = 1): Buffer {
	const bytes = Buffer.alloc(length);
	let state = seed >>> 0 || 1;
	for (let i = 0; i < length; i += 4) {
		// xorshift32: cheap, and no two 4-byte words repeat within these sizes.
		state ^= state << 13;
		state ^= state >>> 17;
		state ^= state << 5;
		state >>>= 0;
		if (i + 4 <= length) bytes.writeUInt32LE(state, i);
		else for (let j = i; j < length; j++) bytes[j] = (state >>> ((j - i) * 8)) & 0xff;
	}
	return bytes;
}

export async function readAll(stream: Readable): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
	return Buffer.concat(chunks);
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
