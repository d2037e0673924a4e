/**
 * Remembered answers for `Idempotency-Key` (scoped to the API key, kept as long as the retention).
 * In the data dir's SQLite database on one machine, PostgreSQL for a fleet, so a retry that lands
 * on another replica (or another process on the data dir) replays the same answer.
 */
export interface StoredAnswer {
	status: number;
	/** Content-Type of the body. */
	contentType: string;
	/**
	 * The body exactly as first sent (replayed byte for byte), but for the bytes of `inlineFiles`:
	 * those are left out here and sent from storage.
	 */
	body: string;
	/**
	 * Ids of the hosted files the answer points at: deleting one of them forgets the answer, so a
	 * repeat runs again instead of replaying a dead URL. Kept by the store and given back with a
	 * replay (so one whose file expired first can be told apart), never sent.
	 */
	fileIds?: readonly string[];
	/**
	 * Hosted files whose bytes the answer carries as base64 JSON strings (`b64_json`), in the order
	 * they come: each is spliced into `body` at `at` when sent. They are in `fileIds` too.
	 */
	inlineFiles?: readonly InlineFilePart[];
}

export interface InlineFilePart {
	fileId: string;
	/** Where in `body` (a string index) the file's base64 goes, between the quotes left there. */
	at: number;
}

export interface IdempotencyClaim {
	apiKeyId: string;
	key: string;
	/** SHA-256 (hex) of the method, path and body: a different body under the same key is a 422. */
	fingerprint: string;
	/** How long the claim is kept once completed. */
	expiresAt: Date;
	/** A claim still running after this is taken to be abandoned by a dead process. */
	leaseUntil: Date;
}

/**
 * Whether a claim may take a held row over, as SQL for both engines (SQLite's 0/1 reads as a
 * boolean): the row expired, or it is a running claim whose process stopped renewing its lease (a
 * dead process or replica). An abandoned claim is taken over only by the same request (same
 * fingerprint): another body under the key stays a mismatch, and the late `complete` of a run that
 * lost its lease can then only store an answer to that very request. `now` and `fingerprint` are
 * SQL expressions (parameters) of the statement; `row` names the held row.
 */
export function takeableSql(now: string, fingerprint: string, row = 'idempotency_keys'): string {
	return `(${row}.expires_at <= ${now} OR (NOT ${row}.completed AND ${row}.lease_until <= ${now} AND ${row}.fingerprint = ${fingerprint}))`;
}

/** Rows a sweep deletes: expired, and not still running under a live lease. */
export function sweepableSql(now: string): string {
	return `expires_at <= ${now} AND (completed OR lease_until <= ${now})`;
}

/** A running claim given up (its request failed), so that a repeat runs again. */
export const RELEASE_SQL = 'DELETE FROM idempotency_keys WHERE api_key_id = $1 AND key = $2 AND NOT completed';

export type ClaimOutcome =
	| { state: 'claimed' }
	| { state: 'replay'; answer: StoredAnswer }
	| { state: 'mismatch' }
	| { state: 'in_progress' };

export interface IdempotencyStore {
	/** Claims the key for this request, or says why not. Atomic across replicas. */
	claim(claim: IdempotencyClaim, now?: Date): Promise<ClaimOutcome>;
	/** Stores the successful answer of a claimed request. */
	complete(apiKeyId: string, key: string, answer: StoredAnswer): Promise<void>;
	/** The claimed request failed: forget it, so a repeat runs again. */
	release(apiKeyId: string, key: string): Promise<void>;
	/**
	 * The file `fileId` of `apiKeyId` was deleted: forgets that key's answers pointing at it, so
	 * their repeats run again. Answers how many were forgotten.
	 */
	forgetFile(apiKeyId: string, fileId: string): Promise<number>;
	/** Deletes claims past their expiry. */
	sweep(now?: Date): Promise<number>;
	close?(): Promise<void>;
}
