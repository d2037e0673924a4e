/**
 * releaseBytes (server/src/media/release-bytes.ts): a buffer that is all of its memory is emptied
 * at once; a view on part of a larger buffer, such as Node's pool of small buffers, is left alone.
 * transferableBytes moves such a buffer's memory for another thread, and copies a view out.
 */
import { MessageChannel } from 'node:worker_threads';
import { releaseBytes, transferableBytes } from '../../../server/src/media/release-bytes';

test('a buffer that is all of its memory is emptied, with every view of it', () => {
	const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
	const view = new Uint8Array(bytes.buffer);
	releaseBytes(bytes);
	expect(bytes.byteLength).toBe(0);
	expect(view.byteLength).toBe(0);
	expect(bytes.buffer.byteLength).toBe(0);
});

test('a part of a larger buffer is left as it is, and so is its neighbour', () => {
	const small = Buffer.from('pooled'); // from Node's shared pool
	const whole = Buffer.alloc(64, 1);
	const part = whole.subarray(8, 16);
	releaseBytes(small);
	releaseBytes(part);
	expect(small.toString()).toBe('pooled');
	expect(part.byteLength).toBe(8);
	expect(whole.byteLength).toBe(64);
});

/** Whether the buffer's memory was handed away (ES2024 `ArrayBuffer.prototype.detached`). */
const detached = (bytes: Uint8Array) => (bytes.buffer as ArrayBuffer & { detached: boolean }).detached;

test('releasing twice, or an empty buffer, changes nothing', () => {
	const bytes = Buffer.alloc(1024);
	releaseBytes(bytes);
	const released = bytes.buffer;
	expect(() => releaseBytes(bytes)).not.toThrow();
	expect(bytes.buffer).toBe(released);
	expect(detached(bytes)).toBe(true);
	expect(bytes.byteLength).toBe(0);

	// An empty buffer's memory is not handed away: it stays a usable buffer, as it was.
	const empty = Buffer.alloc(0);
	const memory = empty.buffer;
	expect(() => releaseBytes(empty)).not.toThrow();
	expect(empty.buffer).toBe(memory);
	expect(detached(empty)).toBe(false);
	expect(Buffer.concat([empty, Buffer.from('still usable')]).toString()).toBe('still usable');
});

describe('transferableBytes', () => {
	test('bytes owning their memory are moved: the same contents, the bytes emptied', () => {
		const bytes = Buffer.from(new Uint8Array([1, 2, 3, 4]).buffer);
		const moved = transferableBytes(bytes);
		expect([...new Uint8Array(moved)]).toEqual([1, 2, 3, 4]);
		expect(bytes.byteLength).toBe(0);
	});

	test('a view on part of a larger buffer (Node’s pool) is copied out exactly, the larger buffer left whole', () => {
		const pooled = Buffer.from('a small buffer from the pool');
		expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.byteLength);
		const copied = transferableBytes(pooled);
		expect(copied.byteLength).toBe(pooled.byteLength);
		expect(Buffer.from(copied).toString()).toBe('a small buffer from the pool');
		expect(pooled.toString()).toBe('a small buffer from the pool');
		// The copy is its own memory: giving it to another thread leaves the pool untouched.
		const { port1, port2 } = new MessageChannel();
		port1.postMessage(copied, [copied]);
		port1.close();
		port2.close();
		expect(copied.byteLength).toBe(0);
		expect(pooled.toString()).toBe('a small buffer from the pool');
	});
});
