/**
 * ImageBytes (server/src/media/image-bytes.ts): who owns an image's bytes. Owned bytes are given
 * back at once when released; lent ones are left to their owner; a step that passes its input on
 * keeps that input's owner, and one that made a copy owns it.
 */
import { ImageBytes } from '../../../server/src/media/image-bytes';

const image = () => Buffer.alloc(512 * 1024, 7);

test('owned bytes are given back on release, with every view of them; a second release changes nothing', () => {
	const bytes = image();
	const view = new Uint8Array(bytes.buffer);
	const owned = ImageBytes.owned(bytes);
	expect(owned.owned).toBe(true);
	owned.release();
	expect(bytes.byteLength).toBe(0);
	expect(view.byteLength).toBe(0);
	owned.release();
	expect(owned.bytes.byteLength).toBe(0);
});

test('lent bytes are left as they were: their owner reads them again', () => {
	const bytes = image();
	const lent = ImageBytes.lent(bytes);
	expect(lent.owned).toBe(false);
	lent.release();
	expect(bytes.byteLength).toBe(512 * 1024);
	expect(bytes.every((byte) => byte === 7)).toBe(true);
});

test('what a step answered: its input when passed on unchanged, with that input’s owner; else a copy of ours', () => {
	const lent = ImageBytes.lent(image());
	const fitted = ImageBytes.owned(image());
	expect(ImageBytes.madeFrom(lent.bytes, fitted, lent)).toBe(lent);
	expect(ImageBytes.madeFrom(fitted.bytes, fitted, lent)).toBe(fitted);

	const copy = Buffer.from(lent.bytes);
	const made = ImageBytes.madeFrom(copy, fitted, lent);
	expect(made.bytes).toBe(copy);
	expect(made.owned).toBe(true);
	// Equal bytes are not the same memory: only the very buffer counts as passed on.
	expect(made).not.toBe(lent);
});
