/**
 * The payload's code: the convolutional code corrects scattered errors and weak readings, and the
 * CRC-32 turns away what the decoder makes of readings that carry no payload.
 */
import { randomBytes } from 'node:crypto';
import { decode, encode } from '../../../../server/src/provenance/watermark/convolutional-code';
import { CODE_BITS, codeBitsFor, decodePayload, PAYLOAD_BYTES } from '../../../../server/src/provenance/watermark/payload-code';
import { xorshift32 } from '../../../../server/src/provenance/watermark/spreading';

it('encodes 96 message bits into 204 code bits: rate 1/2 with six flushing bits', () => {
	expect(PAYLOAD_BYTES).toBe(8);
	expect(CODE_BITS).toBe(204);
	expect(codeBitsFor(randomBytes(8))).toHaveLength(204);
});

it('the generators 171 and 133 (octal): a single 1 gives their taps, newest bit first', () => {
	const impulse = new Uint8Array(8);
	impulse[0] = 1;
	const code = Array.from(encode(impulse)).map((bit) => (bit > 0 ? 1 : 0));
	// 0o171 = 1111001 and 0o133 = 1011011, read from the lowest bit as the impulse moves up the register.
	const firsts = code.filter((_, i) => i % 2 === 0).slice(0, 7);
	const seconds = code.filter((_, i) => i % 2 === 1).slice(0, 7);
	expect(firsts).toEqual([1, 0, 0, 1, 1, 1, 1]);
	expect(seconds).toEqual([1, 1, 0, 1, 1, 0, 1]);
});

it('decodes a clean code, one with every tenth bit flipped, and one with an eighth of its bits read wrong but weakly', () => {
	const next = xorshift32(12345);
	for (let round = 0; round < 20; round++) {
		const payload = randomBytes(8);
		const code = codeBitsFor(payload);
		const clean = Float32Array.from(code);
		expect(decodePayload(clean)).toEqual({ payload: new Uint8Array(payload), bitAgreement: 1 });
		const flipped = Float32Array.from(code);
		for (let i = round % 10; i < flipped.length; i += 10) flipped[i] = -flipped[i]!;
		expect(decodePayload(flipped)?.payload).toEqual(new Uint8Array(payload));
		// A soft decoder weighs a weak wrong reading less than a clear right one.
		const weaklyWrong = Float32Array.from(code, (bit) => (next() % 8 === 0 ? -0.25 * bit : bit));
		expect(decodePayload(weaklyWrong)?.payload).toEqual(new Uint8Array(payload));
	}
});

it('readings that carry no payload: the check fails (2,000 tries)', () => {
	const next = xorshift32(777);
	let passed = 0;
	for (let round = 0; round < 2_000; round++) {
		const readings = Float32Array.from({ length: CODE_BITS }, () => next() / 2 ** 32 - 0.5);
		if (decodePayload(readings) !== undefined) passed++;
	}
	expect(passed).toBe(0);
	expect(decodePayload(new Float32Array(CODE_BITS))).toBeUndefined();
});

it('decode finds the message with the best-fitting code among all 2^n (checked exhaustively for 8 bits)', () => {
	const next = xorshift32(99);
	for (let round = 0; round < 20; round++) {
		const readings = Float32Array.from({ length: 2 * (8 + 6) }, () => next() / 2 ** 32 - 0.5);
		const fit = (message: Uint8Array) => encode(message).reduce((sum, bit, i) => sum + bit * readings[i]!, 0);
		let best = -Infinity;
		for (let value = 0; value < 256; value++) best = Math.max(best, fit(Uint8Array.from({ length: 8 }, (_, i) => (value >> i) & 1)));
		expect(fit(decode(readings, 8))).toBeCloseTo(best, 4);
	}
});
