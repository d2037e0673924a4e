/**
 * A generation that is a job tells its caller the answer with the usage line as statements
 * (`succeeded`: the job writes them in its end's transaction) and does not hand the line to the
 * ledger; the reservation is settled after. A job canceled as its success was written fails the
 * generation as canceled: the reservation is released, not settled, and its images removed. A
 * store that fails to write the end fails it with its error and leaves both to the job's recovery
 * (which ends it and releases its charge once).
 */
import { parseGenerationRequest } from '../../../core/schemas';
import type { SqlStatement } from '../../../server/src/db/sql-adapter';
import type { JobUsageLine } from '../../../server/src/usage/job-usage-line';
import { flatKeyPolicy } from '../../../server/src/keys/authenticate';
import { createGenerationRunner, type GenerationServices } from '../../../server/src/generation/run-generation';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import { makeImage } from '../support/media';

test("a job's caller gets the usage line with the answer; a cancel meanwhile gives back and removes, a store's failure leaves it to recovery", async () => {
	const output = await makeImage('png', 256, 256);
	const happened: string[] = [];
	const provider = { name: 'stand-in', generate: async () => [ImageBytes.lent(output)] };
	const run = createGenerationRunner({
		providers: { 'p-image': provider, 'p-image-edit': provider, 'textimage-v2': provider },
		prices: {},
		timeoutMs: 10_000,
		inputs: { fetchRemote: async () => Buffer.alloc(0), maxInputImageBytes: 1_048_576 },
		hostedFiles: {
			putBuffer: async () => ({ id: 'file-1', expiresAt: new Date(Date.now() + 3_600_000) }),
			publicUrl: (file: { id: string }) => `http://127.0.0.1:1/files/${file.id}`,
			remove: async (id: string) => void happened.push(`removed ${id}`),
		},
		usageLedger: {
			record: async () => void happened.push('ledger told'),
			statementsFor: (entry: { requestId: string; images: number }): SqlStatement[] => [{ sql: 'INSERT INTO usage_lines', values: [entry.requestId, entry.images] }],
		},
		budgets: {
			reserve: async () => ({ settle: async () => void happened.push('settled'), release: async () => void happened.push('released') }),
		},
		log: console,
	} as unknown as GenerationServices);

	const request = parseGenerationRequest({ model: 'p-image', prompt: 'a harbour', response_format: 'url' });
	const failure = new Error('the job store is gone');
	let told: readonly SqlStatement[] = [];
	const caller = { apiKeyId: 'k', apiKey: flatKeyPolicy('k'), clientGone: new AbortController().signal };
	const storeGone = async (answer: { data: unknown[] }, usageLine: JobUsageLine) => {
		happened.push(`told ${answer.data.length} image`);
		told = usageLine.statements;
		throw failure;
	};
	await expect(run(request, { ...caller, succeeded: storeGone })).rejects.toBe(failure);
	expect(told).toEqual([{ sql: 'INSERT INTO usage_lines', values: [expect.any(String), 1] }]);
	expect(happened).toEqual(['told 1 image']);

	happened.length = 0;
	const job = new AbortController();
	const canceledMeanwhile = async () => {
		happened.push('told');
		job.abort(new DOMException('the job was canceled', 'AbortError'));
		throw job.signal.reason;
	};
	await expect(run(request, { ...caller, clientGone: job.signal, succeeded: canceledMeanwhile })).rejects.toMatchObject({ code: 'cancelled' });
	expect(happened).toEqual(['told', 'released', 'removed file-1']);

	happened.length = 0;
	await run(request, { ...caller, succeeded: async () => void happened.push('told') });
	expect(happened).toEqual(['told', 'settled']);
});
