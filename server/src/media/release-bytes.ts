/**
 * Gives the memory of bytes back as soon as their owner is done with them, instead of when the
 * garbage collector next runs. A buffer of a few MB lives outside V8's heap, so V8 sees almost no
 * heap allocation from it and may not collect for dozens of images: a thread that allocates little
 * on its heap (the marking worker) kept every dead copy resident until it did. Detaching the
 * ArrayBuffer (`transfer(0)`) frees it at once. Images go through ImageBytes (media/image-bytes.ts),
 * which says whether they are ours to release.
 *
 * Only for bytes the caller made and no one else holds: every view of the same memory is emptied.
 * A view on part of a larger buffer (Node's pool of small buffers) is left alone.
 */
export function releaseBytes(bytes: Uint8Array): void {
	const { buffer } = bytes;
	if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0) return;
	if (bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength) return;
	transfer(buffer, 0);
}

/**
 * The first `length` bytes of a buffer that owns its whole memory, in a buffer of exactly that
 * length (larger: the rest unset), its old memory given back at once. A buffer that is a view on
 * part of its memory could not be released by releaseBytes, so bytes meant to be released later
 * (an owned ImageBytes) are brought to their size this way.
 */
export function resizedBytes(bytes: Buffer, length: number): Buffer {
	if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) throw new Error('resizedBytes: the buffer must own its whole memory');
	return Buffer.from(transfer(bytes.buffer as ArrayBuffer, length));
}

/**
 * The memory of bytes their caller is done with, as an ArrayBuffer another thread can take over
 * (postMessage's transfer list), the bytes emptied. A native addon's buffers (sharp's) cannot be
 * transferred themselves; moved into a buffer of V8's own, they can. A view on part of a larger
 * buffer is copied out instead, its memory left as it is.
 */
export function transferableBytes(bytes: Uint8Array): ArrayBuffer {
	const { buffer } = bytes;
	// A copy of its own (a Buffer's `slice` would be a view on the same memory).
	if (!(buffer instanceof ArrayBuffer) || bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength) return new Uint8Array(bytes).buffer;
	return transfer(buffer, buffer.byteLength);
}

/** ArrayBuffer.prototype.transfer (ES2024, Node 21+), which the TypeScript library in use does not declare. */
function transfer(buffer: ArrayBuffer, length: number): ArrayBuffer {
	return (buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(length);
}
