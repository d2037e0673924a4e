/**
 * The error-correcting code: the rate-1/2, constraint-length-7 convolutional code with generators
 * 171 and 133 (octal) that Voyager, 802.11 and DVB use, decoded by Viterbi's algorithm on soft
 * readings, which counts a code bit read weakly for less than one read clearly. Six zero bits
 * after the message bring the encoder back to its first state, so the decoder knows both ends.
 */
const MEMORY = 6;
const STATES = 1 << MEMORY;
/** Taps on the last seven message bits, the newest in the lowest bit. */
const GENERATORS = [0o171, 0o133] as const;

function parity(value: number): number {
	let bits = value;
	bits ^= bits >> 4;
	bits ^= bits >> 2;
	bits ^= bits >> 1;
	return bits & 1;
}

/** A score no path can have; a constant of the module: no global read in the loop (pixel-change.ts says why). */
const NO_PATH = -Infinity;

/** The two code bits each of the 128 register contents gives, as ±1 (1 → +1). */
const OUTPUTS = Array.from({ length: 1 << (MEMORY + 1) }, (_, register) => GENERATORS.map((taps) => (parity(register & taps) ? 1 : -1)));

export function codeLength(messageBits: number): number {
	return GENERATORS.length * (messageBits + MEMORY);
}

/** Message bits (0/1) → code bits as ±1, six flushing zeros included. */
export function encode(message: Uint8Array): Int8Array {
	const code = new Int8Array(codeLength(message.length));
	let register = 0;
	for (let i = 0; i < message.length + MEMORY; i++) {
		register = ((register << 1) | (message[i] ?? 0)) & ((1 << (MEMORY + 1)) - 1);
		const [first, second] = OUTPUTS[register]!;
		code[2 * i] = first!;
		code[2 * i + 1] = second!;
	}
	return code;
}

/**
 * The message whose code correlates best with `readings` (one per code bit, positive for 1,
 * larger for surer), among all messages of `messageBits` bits: Viterbi's algorithm.
 */
export function decode(readings: Float32Array, messageBits: number): Uint8Array {
	const steps = messageBits + MEMORY;
	let scores = new Float64Array(STATES).fill(NO_PATH);
	let nextScores = new Float64Array(STATES);
	scores[0] = 0;
	// For each step and state, which of its two predecessors won (the predecessor's oldest bit).
	const choices = new Uint8Array(steps * STATES);
	for (let step = 0; step < steps; step++) {
		const first = readings[2 * step]!;
		const second = readings[2 * step + 1]!;
		for (let state = 0; state < STATES; state++) {
			const bit = state & 1;
			let best = NO_PATH;
			for (let oldest = 0; oldest < 2; oldest++) {
				const previous = (state >> 1) | (oldest << (MEMORY - 1));
				const [a, b] = OUTPUTS[(previous << 1) | bit]!;
				const score = scores[previous]! + a! * first + b! * second;
				if (score > best) {
					best = score;
					choices[step * STATES + state] = oldest;
				}
			}
			nextScores[state] = best;
		}
		[scores, nextScores] = [nextScores, scores];
	}
	const message = new Uint8Array(steps);
	for (let step = steps - 1, state = 0; step >= 0; step--) {
		message[step] = state & 1;
		state = (state >> 1) | (choices[step * STATES + state]! << (MEMORY - 1));
	}
	return message.subarray(0, messageBits);
}
