/**
 * releaseBytes (server/src/media/release-bytes.ts): a buffer that is all of its memory is emptied
 * at once; a view on part of a larger buffer, such as Node's pool of small buffers, is left alone.
 */
import { releaseBytes } from '../../../server/src/media/release-bytes';

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

test('releasing twice, or an empty buffer, changes nothing', () => {
	const bytes = Buffer.alloc(1024);
	releaseBytes(bytes);
	expect(() => releaseBytes(bytes)).not.toThrow();
	expect(() => releaseBytes(Buffer.alloc(0))).not.toThrow();
});
