/**
 * Image bytes, and whether whoever holds them owns their memory. A decoded or re-encoded image is
 * a few MB outside V8's heap: V8 sees almost no allocation from it and may not collect for dozens
 * of images, so an image we own is given back (`release`) as soon as we are done with it instead
 * of staying resident until the next collection (media/release-bytes.ts). Lent bytes are someone
 * else's to keep (a host that answers the same buffer again, a caller's input): released, they are
 * left as they are.
 */
import { releaseBytes } from './release-bytes';

export class ImageBytes {
	private constructor(
		readonly bytes: Buffer,
		/** Ours to give back once done with: made for this holder alone, no one else reads them. */
		readonly owned: boolean,
	) {}

	/** Bytes made for their holder alone (decoded, downloaded, drawn, re-encoded, marked). */
	static owned(bytes: Buffer): ImageBytes {
		return new ImageBytes(bytes, true);
	}

	/** Bytes someone else keeps and may read or hand out again. */
	static lent(bytes: Buffer): ImageBytes {
		return new ImageBytes(bytes, false);
	}

	/**
	 * What a step (a fit, a marking) answered from `inputs`: the input itself when the step passed it
	 * on unchanged, with its owner; else a copy the step made, ours.
	 */
	static madeFrom(answered: Buffer, ...inputs: readonly ImageBytes[]): ImageBytes {
		return inputs.find((input) => input.bytes === answered) ?? ImageBytes.owned(answered);
	}

	/**
	 * Done with: owned bytes are given back at once (every view of them is empty afterwards), lent
	 * bytes are left alone. Releasing again changes nothing.
	 */
	release(): void {
		if (this.owned) releaseBytes(this.bytes);
	}
}
