/**
 * Gives the memory of image bytes back as soon as their owner is done with them, instead of when
 * the garbage collector next runs. A few-MB buffer lives outside V8's heap, so V8 sees almost no
 * heap allocation from it and may not collect for dozens of images: in the marking worker, 100 MB
 * of such dead buffers (each generation's copies of a 3 MB image) stayed resident until it did
 * (bench/RESULTS.md, "Inline generations: memory given back as it is used"). Detaching the
 * ArrayBuffer (`transfer(0)`) frees it at once.
 *
 * Only for bytes the caller made and no one else holds: every view of the same memory is emptied.
 * A view on part of a larger buffer (Node's pool of small buffers) is left alone.
 */
export function releaseBytes(bytes: Uint8Array): void {
	const { buffer } = bytes;
	if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0) return;
	if (bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength) return;
	(buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(0);
}
