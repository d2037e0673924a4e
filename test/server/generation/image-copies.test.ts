/**
 * What a generation does with the image copies it makes (server/src/generation/produce-image.ts):
 * each is given back once read (sharp's re-encode once marked, the marked image once stored), not
 * left for V8's next collection; the provider's bytes too when it made them for this answer
 * (owned), and never when they are lent, so a host (or a stand-in) may hand out the same buffer again.
 */
import { parseGenerationRequest } from '../../../core/schemas';
import { flatKeyPolicy } from '../../../server/src/keys/authenticate';
import { createGenerationRunner, type GenerationServices } from '../../../server/src/generation/run-generation';
import { UNMARKED, type GeneratedImageFacts, type ProvenanceMarker } from '../../../server/src/provenance/provenance-marker';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import * as provenanceRecords from '../../../server/src/provenance/provenance-records';
import { InlineBytes, InlineFile } from '../../../server/src/storage/inline-answer';
import { makeImage } from '../support/media';
import sharp from 'sharp';

/**
 * A marker that answers a copy of its own, as the C2PA one does, and remembers what it was given
 * (`read`: the encoded images; `facts`: everything); pixels it encodes as PNG.
 */
function copyingMarker(): ProvenanceMarker & { read: Buffer[]; facts: GeneratedImageFacts[] } {
	const read: Buffer[] = [];
	const facts: GeneratedImageFacts[] = [];
	return {
		read,
		facts,
		async markGenerated(image: GeneratedImageFacts) {
			facts.push(image);
			if ('pixels' in image) {
				const { data, info } = image.pixels;
				const bytes = await sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels as 3 } }).png().toBuffer();
				return { bytes, provenance: { c2pa: 'signed', digital_source_type: null }, ...(image.watermark && { watermark: image.watermark }) };
			}
			read.push(image.bytes);
			return { bytes: Buffer.from(image.bytes), provenance: { c2pa: 'signed', digital_source_type: null }, ...(image.watermark && { watermark: image.watermark }) };
		},
		markConverted: async () => {
			throw new Error('not reached');
		},
		markVideo: UNMARKED.markVideo,
	};
}

function runnerWith(output: Buffer, provenance: ProvenanceMarker, { owned = false, recorded = false } = {}) {
	const stored: Buffer[] = [];
	// A copy of its own per answer, as a host's decoded base64 is; else the same buffer every time.
	const handedOut: Buffer[] = [];
	const hostedFiles = {
		putBuffer: async (bytes: Buffer) => {
			// What storage saw while it wrote, before the run was done with the bytes.
			stored.push(Buffer.from(bytes));
			return { id: `file-${stored.length}`, expiresAt: new Date(Date.now() + 3_600_000), bytes };
		},
		publicUrl: (file: { id: string }) => `http://127.0.0.1:1/files/${file.id}`,
	};
	const provider = {
		name: 'stand-in',
		generate: async () => {
			if (!owned) return [ImageBytes.lent(output)];
			handedOut.push(Buffer.from(output));
			return [ImageBytes.owned(handedOut.at(-1)!)];
		},
	};
	const run = createGenerationRunner({
		providers: { 'p-image': provider, 'p-image-edit': provider, 'textimage-v2': provider },
		prices: {},
		timeoutMs: 10_000,
		inputs: { fetchRemote: async () => Buffer.alloc(0), maxInputImageBytes: 1_048_576 },
		hostedFiles,
		usageLedger: { record: async () => undefined },
		budgets: { reserve: async () => null },
		log: console,
		provenance,
		// Where watermarks' payloads are recorded: with it (and a job), images are watermarked.
		...(recorded && { provenanceRecords: { create: async () => true } }),
	} as unknown as GenerationServices);
	const generate = (responseFormat: 'url' | 'b64_json', keepsInlineImages: boolean) =>
		run(parseGenerationRequest({ model: 'p-image', prompt: 'a harbour', response_format: responseFormat }), {
			apiKeyId: 'k',
			apiKey: flatKeyPolicy('k'),
			clientGone: new AbortController().signal,
			keepsInlineImages,
			...(recorded && { jobId: 'gen_0123456789abcdef0123456789abcdef' }),
		});
	return { generate, stored, hostedFiles, handedOut };
}

test('a re-encoded, marked and stored image: each copy given back once read; the provider’s bytes untouched and served again', async () => {
	// 1024 × 576 for a square request: fitted (re-encoded by sharp), then marked.
	const output = await makeImage('png', 1024, 576);
	const original = Buffer.from(output);
	const marker = copyingMarker();
	const { generate, stored } = runnerWith(output, marker);
	for (const [format, keeps] of [['b64_json', true], ['url', false]] as const) {
		const answer = await generate(format, keeps);
		const image = answer.data[0]!;
		expect('b64_json' in image ? image.b64_json : image.url).toBeDefined();
		if ('b64_json' in image) expect(image.b64_json).toBeInstanceOf(InlineFile);
	}
	expect(stored).toHaveLength(2);
	expect(stored.every((bytes) => bytes.byteLength > 0)).toBe(true);
	// sharp's re-encode, once marked: released.
	expect(marker.read.map((bytes) => bytes.byteLength)).toEqual([0, 0]);
	expect(output.equals(original)).toBe(true);
});

test('an image nobody replays goes out from memory: marked bytes are the answer’s to release once sent, the provider’s are not', async () => {
	const output = await makeImage('png', 1024, 1024);
	const marked = runnerWith(output, copyingMarker());
	const ownAnswer = await marked.generate('b64_json', false);
	const own = ownAnswer.data[0]!;
	expect('b64_json' in own && own.b64_json instanceof InlineBytes && own.b64_json.image.owned).toBe(true);

	// Unmarked and already the right size: the provider's own buffer is the answer, and stays its.
	const unmarked = runnerWith(output, UNMARKED);
	const passedAnswer = await unmarked.generate('b64_json', false);
	const passed = passedAnswer.data[0]!;
	expect('b64_json' in passed && passed.b64_json instanceof InlineBytes && passed.b64_json.image.bytes).toBe(output);
	expect('b64_json' in passed && passed.b64_json instanceof InlineBytes && passed.b64_json.image.owned).toBe(false);
	// Stored unmarked: still the provider's, never released.
	await unmarked.generate('b64_json', true);
	expect(output.byteLength).toBeGreaterThan(0);
	expect(unmarked.stored[0]!.equals(output)).toBe(true);
});

test('bytes a provider made for this answer (owned) are given back once used: after marking, or once stored or sent', async () => {
	const output = await makeImage('png', 1024, 1024);
	const marked = runnerWith(output, copyingMarker(), { owned: true });
	await marked.generate('url', false);
	// Marked into a copy of its own: the provider's bytes were done with once read.
	expect(marked.handedOut[0]!.byteLength).toBe(0);

	const unmarked = runnerWith(output, UNMARKED, { owned: true });
	await unmarked.generate('url', false);
	// Unmarked, they are the image itself: stored whole, then given back.
	expect(unmarked.stored[0]!.equals(output)).toBe(true);
	expect(unmarked.handedOut[0]!.byteLength).toBe(0);
	const inline = (await unmarked.generate('b64_json', false)).data[0]!;
	expect('b64_json' in inline && inline.b64_json instanceof InlineBytes && inline.b64_json.image.owned).toBe(true);
	expect(output.byteLength).toBeGreaterThan(0);
});

test('an image to be watermarked that the fit changes reaches the marking as pixels, encoded once there; one that fits, as its bytes', async () => {
	// 1024 × 576 for a square request: fitted to 1024 × 1024.
	const output = await makeImage('png', 1024, 576);
	const marker = copyingMarker();
	const { generate, stored } = runnerWith(output, marker, { recorded: true });
	await generate('url', false);
	const [fitted] = marker.facts;
	if (!fitted || !('pixels' in fitted)) throw new Error('the marking was not given the fitted pixels');
	expect(fitted.pixels.info).toMatchObject({ width: 1024, height: 1024 });
	expect(fitted.watermark).toHaveLength(8);
	// The provider's image is the source the manifest names, with what the fit did.
	expect(fitted.source.bytes).toBe(output);
	expect(fitted.source.changes).toEqual(['resized']);
	expect(marker.read).toEqual([]);
	expect(await sharp(stored[0]!).metadata()).toMatchObject({ format: 'png', width: 1024, height: 1024 });

	const square = await makeImage('png', 1024, 1024);
	const asItCame = copyingMarker();
	await runnerWith(square, asItCame, { recorded: true }).generate('url', false);
	expect(asItCame.facts[0]).toMatchObject({ bytes: square, watermark: expect.any(Uint8Array) });
	expect(asItCame.facts[0]!.source).toBeUndefined();
});

test('without a watermark to embed, a fitted image reaches the marking encoded, as before', async () => {
	const marker = copyingMarker();
	await runnerWith(await makeImage('png', 1024, 576), marker).generate('url', false);
	expect(marker.facts[0]).toHaveProperty('bytes');
	expect(marker.facts[0]!.watermark).toBeUndefined();
});

test('with `--provenance off` no watermark payload is drawn, though the job could record one', async () => {
	const drawn = jest.spyOn(provenanceRecords, 'newProvenancePayload');
	try {
		await runnerWith(await makeImage('png', 1024, 576), UNMARKED, { recorded: true }).generate('url', false);
		expect(drawn).not.toHaveBeenCalled();
	} finally {
		drawn.mockRestore();
	}
});
