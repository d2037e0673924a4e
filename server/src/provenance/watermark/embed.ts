/**
 * Writing the mark: each code bit's reading (spreading.ts) is pushed to MARGIN on the side of its
 * value by the smallest change that does it, spread evenly over the bit's coefficients that are
 * still within the limiter's reach. A bit the picture already reads right by that much is left
 * alone, so the picture's own content is used rather than fought ("informed" spread spectrum);
 * only what is missing is added. A pushed coefficient may reach the limit and stop counting, so
 * the push is made again for what is still missing, a few times.
 */
import { readCoefficients, samplesOfCoefficients } from './block-coefficients';
import { gridForEmbedding } from './canonical-grid';
import { addFromGrid, lumaOnGrid } from './grid-sampling';
import { CODE_BITS, checkPayload, codeBitsFor } from './payload-code';
import { checkRawImage, type RawImage } from './raw-image';
import { COEFFICIENT_LIMIT, limited, readCodeBits, spreadingFor, type Spreading } from './spreading';

/** How far past zero each code bit's reading is pushed, in luma levels (the limiter's 5 at most). */
const MARGIN = 3;
/**
 * How far a coefficient is pushed at most: past the limit it adds nothing to its reading, only to
 * the change, but a little past it stays at the limit after a lossy encoding weakens it.
 */
const PUSH_CEILING = 1.5 * COEFFICIENT_LIMIT;
/** Pushes made: each after the last one's coefficients that reached the limit stopped counting. */
const PUSHES = 3;
/**
 * Spread back over the pixels (interpolated, rounded, clipped to 0–255) and averaged down again,
 * a change on the grid comes back a little weaker: it is written this much stronger.
 */
const ROUND_TRIP_GAIN = 1.15;

/**
 * A copy of `pixels` carrying `payload` (PAYLOAD_BYTES bytes) in its luma; alpha is untouched.
 * Throws a RangeError naming the field for an image that is not raw pixels, is too small (under
 * 256 px on its long side, or narrower than its grid) or too narrow (beyond 8:1), or a payload of
 * another length.
 */
export function embedWatermark(pixels: RawImage, payload: Uint8Array): RawImage {
	checkRawImage(pixels);
	const copy: RawImage = { data: Buffer.from(pixels.data), info: { ...pixels.info } };
	embedWatermarkInPlace(copy, payload);
	return copy;
}

/**
 * Marks `pixels` themselves, as embedWatermark does a copy: for pixels nothing else holds (just
 * decoded, about to be encoded), where a second image-sized buffer would only cost its memory and
 * the time to fill it.
 */
export function embedWatermarkInPlace(pixels: RawImage, payload: Uint8Array): void {
	checkRawImage(pixels);
	checkPayload(payload);
	const grid = gridForEmbedding(pixels.info.width, pixels.info.height);
	const spreading = spreadingFor(grid, CODE_BITS);
	const coefficients = readCoefficients(lumaOnGrid(pixels, grid), grid);
	const changes = strengthened(pushes(coefficients, spreading, codeBitsFor(payload)));
	addFromGrid(pixels, grid, samplesOfCoefficients(changes, grid));
}

/**
 * `changes` made ROUND_TRIP_GAIN times larger, in place. A loop of its own rather than one in
 * embedWatermarkInPlace: a long loop has its function compiled while still in it, before the
 * calls after the loop have run, and that compiled code gives up at those calls on every call.
 */
function strengthened(changes: Float32Array): Float32Array {
	for (let i = 0; i < changes.length; i++) changes[i]! *= ROUND_TRIP_GAIN;
	return changes;
}

/** The change to each coefficient that brings every code bit's reading to MARGIN on the side of `code`. */
function pushes(coefficients: Float32Array, spreading: Spreading, code: Int8Array): Float32Array {
	const { bitOf, sign, carriers } = spreading;
	const marked = coefficients.slice();
	const changes = new Float32Array(coefficients.length);
	const within = (value: number) => value > -COEFFICIENT_LIMIT && value < COEFFICIENT_LIMIT;
	for (let push = 0; push < PUSHES; push++) {
		const readings = readCodeBits(marked, spreading);
		const movable = new Uint32Array(CODE_BITS);
		for (let i = 0; i < marked.length; i++) if (within(marked[i]!)) movable[bitOf[i]!]!++;
		// The step each of a bit's movable coefficients takes to raise the bit's mean reading to MARGIN.
		const steps = new Float32Array(CODE_BITS);
		for (let bit = 0; bit < CODE_BITS; bit++) {
			const missing = Math.max(0, MARGIN - code[bit]! * readings[bit]!);
			steps[bit] = movable[bit]! === 0 ? 0 : (code[bit]! * missing * carriers[bit]!) / movable[bit]!;
		}
		for (let i = 0; i < marked.length; i++) {
			if (!within(marked[i]!)) continue;
			const pushed = limited(marked[i]! + sign[i]! * steps[bitOf[i]!]!, PUSH_CEILING);
			changes[i]! += pushed - marked[i]!;
			marked[i] = pushed;
		}
	}
	return changes;
}
