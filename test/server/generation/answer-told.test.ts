/**
 * A generation tells its caller the answer (`succeeded`: a job's end) in the same turn as it hands
 * the usage line to the ledger, and waits for both. A caller that fails at once, while the usage
 * line still waits for the disk, fails the generation with its error, and that failure is never
 * left unhandled meanwhile (Node ends a process on an unhandled rejection).
 */
import { parseGenerationRequest } from '../../../core/schemas';
import { flatKeyPolicy } from '../../../server/src/keys/authenticate';
import { createGenerationRunner, type GenerationServices } from '../../../server/src/generation/run-generation';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import { makeImage } from '../support/media';

test("a caller's failure to write the answer fails the generation, handled while the usage line is still on its way", async () => {
	const output = await makeImage('png', 1024, 1024);
	let usageWritten!: () => void;
	const order: string[] = [];
	const provider = { name: 'stand-in', generate: async () => [ImageBytes.lent(output)] };
	const run = createGenerationRunner({
		providers: { 'p-image': provider, 'p-image-edit': provider, 'textimage-v2': provider },
		prices: {},
		timeoutMs: 10_000,
		inputs: { fetchRemote: async () => Buffer.alloc(0), maxInputImageBytes: 1_048_576 },
		hostedFiles: {
			putBuffer: async () => ({ id: 'file-1', expiresAt: new Date(Date.now() + 3_600_000) }),
			publicUrl: (file: { id: string }) => `http://127.0.0.1:1/files/${file.id}`,
		},
		usageLedger: {
			record: () => {
				order.push('usage line');
				return new Promise<void>((resolve) => (usageWritten = resolve));
			},
		},
		budgets: { reserve: async () => null },
		log: console,
	} as unknown as GenerationServices);

	const unhandled: unknown[] = [];
	const onUnhandled = (reason: unknown) => unhandled.push(reason);
	process.on('unhandledRejection', onUnhandled);
	try {
		const failure = new Error('the job store is gone');
		const generation = run(parseGenerationRequest({ model: 'p-image', prompt: 'a harbour', response_format: 'url' }), {
			apiKeyId: 'k',
			apiKey: flatKeyPolicy('k'),
			clientGone: new AbortController().signal,
			succeeded: async (answer) => {
				order.push(`told ${answer.data.length} image`);
				throw failure;
			},
		});
		const settled = generation.then(
			() => 'answered',
			(error: unknown) => error,
		);
		// Turns pass (and Node would report an unhandled rejection) before the usage line is on the disk.
		await new Promise((resolve) => setTimeout(resolve, 50));
		usageWritten();
		expect(await settled).toBe(failure);
		expect(order).toEqual(['usage line', 'told 1 image']);
		expect(unhandled).toEqual([]);
	} finally {
		process.off('unhandledRejection', onUnhandled);
	}
});
