/**
 * Provenance records: what a watermark's payload names (docs/provenance.md, "Checking an image").
 * Every marked image gets a record of its own, written before the image is delivered, under a
 * payload drawn at random; a mark found later in a copy of the image (its metadata stripped,
 * re-encoded) leads back to the generation that made it. The store is sql-provenance-store.ts, on
 * the data dir's SQLite database or on PostgreSQL (test/server/support/provenance-store-contract.ts).
 *
 * A record outlives the image it names: it is kept `--provenance-record-days` beyond the file's
 * retention, so a copy posted elsewhere can still be traced once the hosted file is gone.
 */
import { randomBytes } from 'node:crypto';
import { PAYLOAD_BYTES } from './watermark/payload-code';

export interface NewProvenanceRecord {
	/** The mark's payload (PAYLOAD_BYTES bytes, newProvenancePayload()): the record's name. */
	payload: Uint8Array;
	generationId: string;
	model: string;
	/** The key that made the generation: only it is told the generation's id. */
	apiKeyId: string;
	/** SHA-256 of the image as hosted (after marking and signing), lowercase hex. */
	contentHash: string;
	/** Kept only when the store was opened with `includePrompt` (`--provenance-include-prompt`). */
	prompt?: string | null;
	/** When the generation was made; the record is kept for the store's `keepForMs` from it. */
	createdAt: Date;
}

export interface ProvenanceRecord {
	/** The payload as 16 lowercase hex digits. */
	payload: string;
	generationId: string;
	model: string;
	apiKeyId: string;
	contentHash: string;
	prompt: string | null;
	createdAt: Date;
	/** When the record stops being answered, and is swept. */
	keptUntil: Date;
}

export interface ProvenanceStoreOptions {
	/** How long a record is kept from its `createdAt`: the file's retention plus `--provenance-record-days`. */
	keepForMs: number;
	/** `--provenance-include-prompt`: otherwise a record never holds the prompt, whatever it is given. */
	includePrompt: boolean;
}

export interface ProvenanceRecordStore {
	/**
	 * Writes the record, synced before it answers (an image is delivered only once its record is
	 * there). False when its payload already names another record: draw a new payload and mark again.
	 */
	create(record: NewProvenanceRecord): Promise<boolean>;
	/** The record a payload names, unless there is none or it is past its keeping (swept or not yet). */
	find(payload: Uint8Array, now?: Date): Promise<ProvenanceRecord | null>;
	/** Deletes the records past their keeping; answers how many went. */
	sweep(now?: Date): Promise<number>;
	close?(): Promise<void>;
}

/** A payload for a new record: PAYLOAD_BYTES random bytes (2^64 names: a collision is refused by `create`, never shared). */
export function newProvenancePayload(): Uint8Array {
	return new Uint8Array(randomBytes(PAYLOAD_BYTES));
}

/** A payload as the records and answers name it: 16 lowercase hex digits. */
export function payloadHex(payload: Uint8Array): string {
	if (payload.length !== PAYLOAD_BYTES) throw new RangeError(`payload must be ${PAYLOAD_BYTES} bytes, not ${payload.length}`);
	return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('hex');
}

/** `--provenance-record-days` beyond the file's retention, in milliseconds. */
export function recordKeepingMs(retentionSeconds: number, recordDays: number): number {
	return (retentionSeconds + recordDays * 86_400) * 1000;
}
