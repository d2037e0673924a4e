/**
 * The ImageGenError a call throws or a promise rejects with, for tests that go on to check its
 * status, code and field; anything else thrown, or nothing, fails the test.
 */
import { ImageGenError } from '../../core/errors';

export function thrownImageGenError(run: () => unknown, what = 'the call'): ImageGenError {
	try {
		run();
	} catch (error) {
		expect(error).toBeInstanceOf(ImageGenError);
		return error as ImageGenError;
	}
	throw new Error(`expected ${what} to throw an ImageGenError`);
}

export async function rejectedImageGenError(promise: Promise<unknown>, what = 'the promise'): Promise<ImageGenError> {
	try {
		await promise;
	} catch (error) {
		expect(error).toBeInstanceOf(ImageGenError);
		return error as ImageGenError;
	}
	throw new Error(`expected ${what} to reject with an ImageGenError`);
}
