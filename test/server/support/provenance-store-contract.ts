/**
 * What every ProvenanceRecordStore must do, written once and run against each adapter (the data
 * dir in test/server/provenance/provenance-store-sqlite.test.ts, PostgreSQL in
 * provenance-store-postgres.test.ts): a record found by its payload from any process, every field
 * as written; a payload names one record only; the prompt kept only when the store keeps prompts;
 * a record answered until its keeping ends and swept after it, not before.
 */
import type { NewProvenanceRecord, ProvenanceRecordStore, ProvenanceStoreOptions } from '../../../server/src/provenance/provenance-records';
import { newProvenancePayload, payloadHex } from '../../../server/src/provenance/provenance-records';

export interface ProvenanceStoreHarness {
	/** A store over the harness's backing; called again, another process or replica on the same one. */
	open(options: ProvenanceStoreOptions): Promise<ProvenanceRecordStore>;
	cleanup(): Promise<void>;
}

const T0 = new Date('2030-01-01T12:00:00.123Z');
const DAY = 86_400_000;
const KEEP = { keepForMs: 30 * DAY, includePrompt: false };
const at = (ms: number) => new Date(T0.getTime() + ms);

function record(overrides: Partial<NewProvenanceRecord> = {}): NewProvenanceRecord {
	return {
		payload: newProvenancePayload(),
		generationId: 'gen_0123456789abcdef',
		model: 'p-image',
		apiKeyId: 'key_a',
		contentHash: 'ab'.repeat(32),
		// A prompt a careless store would alter: non-ASCII, line separators, CRLF.
		prompt: 'a fox — “in the snow” é ✓ 🦊\u2028\r\n',
		createdAt: T0,
		...overrides,
	};
}

export function describeProvenanceStoreContract(name: string, factory: () => Promise<ProvenanceStoreHarness>): void {
	describe(`${name}: ProvenanceRecordStore contract`, () => {
		let harness: ProvenanceStoreHarness;
		beforeEach(async () => {
			harness = await factory();
		});
		afterEach(() => harness.cleanup());

		it('finds a record by its payload from another process, every field as written, and nothing for another payload', async () => {
			const writer = await harness.open(KEEP);
			const written = record();
			expect(await writer.create(written)).toBe(true);
			const reader = await harness.open(KEEP);
			expect(await reader.find(written.payload, at(1000))).toEqual({
				payload: payloadHex(written.payload),
				generationId: written.generationId,
				model: 'p-image',
				apiKeyId: 'key_a',
				contentHash: 'ab'.repeat(32),
				prompt: null,
				createdAt: T0,
				keptUntil: at(30 * DAY),
			});
			expect(await reader.find(newProvenancePayload(), at(1000))).toBeNull();
		});

		it('keeps the prompt byte for byte only when the store keeps prompts', async () => {
			const keeping = await harness.open({ ...KEEP, includePrompt: true });
			const withPrompt = record();
			await keeping.create(withPrompt);
			expect((await keeping.find(withPrompt.payload, T0))!.prompt).toBe(withPrompt.prompt);
			const unprompted = record({ prompt: undefined });
			await keeping.create(unprompted);
			expect((await keeping.find(unprompted.payload, T0))!.prompt).toBeNull();
		});

		it('a payload names one record: a second record under it is refused and the first stays', async () => {
			const store = await harness.open(KEEP);
			const first = record();
			expect(await store.create(first)).toBe(true);
			const other = await harness.open(KEEP);
			expect(await other.create(record({ payload: Uint8Array.from(first.payload), generationId: 'gen_other', apiKeyId: 'key_b' }))).toBe(false);
			expect(await store.find(first.payload, T0)).toMatchObject({ generationId: first.generationId, apiKeyId: 'key_a' });
		});

		it('answers a record until its keeping ends, and sweeps it then, not before', async () => {
			const store = await harness.open(KEEP);
			const older = record({ createdAt: T0 });
			const newer = record({ createdAt: at(DAY) });
			await store.create(older);
			await store.create(newer);
			expect(await store.sweep(at(30 * DAY - 1))).toBe(0);
			expect(await store.find(older.payload, at(30 * DAY - 1))).not.toBeNull();
			// Past its keeping it is no longer answered, swept or not.
			expect(await store.find(older.payload, at(30 * DAY))).toBeNull();
			expect(await store.sweep(at(30 * DAY))).toBe(1);
			expect(await store.find(older.payload, T0)).toBeNull();
			expect(await store.find(newer.payload, at(30 * DAY))).toMatchObject({ generationId: newer.generationId });
			expect(await store.sweep(at(31 * DAY))).toBe(1);
			expect(await store.sweep(at(400 * DAY))).toBe(0);
		});

		it('sweeps past many records in batches, every one of them', async () => {
			const store = await harness.open({ keepForMs: DAY, includePrompt: false });
			// More than two of the sweep's batches.
			await Promise.all(Array.from({ length: 1_001 }, () => store.create(record())));
			const kept = record({ createdAt: at(DAY) });
			await store.create(kept);
			expect(await store.sweep(at(DAY))).toBe(1_001);
			expect(await store.find(kept.payload, at(DAY))).not.toBeNull();
		});

		it('refuses a payload that is not 8 bytes, naming it', async () => {
			const store = await harness.open(KEEP);
			await expect(store.create(record({ payload: new Uint8Array(7) }))).rejects.toThrow(/payload must be 8 bytes/);
			await expect(store.find(new Uint8Array(9))).rejects.toThrow(/payload must be 8 bytes/);
		});
	});
}
