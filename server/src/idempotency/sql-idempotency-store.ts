/**
 * Idempotency keys, on either engine: shared by every process on the data dir, or by every replica
 * on PostgreSQL, so a retry that lands elsewhere finds the first request's claim or answer.
 *
 * A claim reads the key's row first: a row held by a live claim or answer decides at once (a
 * replay, a request still running, another body), with no write. Otherwise one write deletes the
 * row if it may be taken over (expired, or abandoned by a dead process: its answer and file rows go
 * with it) and inserts the claim unless another got there first; the key's uniqueness makes exactly
 * one claimant win, whichever process or replica.
 *
 * The answer's body is read only for a replay, after the decision, so neither the heap nor a lock
 * carries it otherwise (on the data dir it is text in a BLOB column, beside the row). The ids of
 * the files an answer points at are rows of `idempotency_files`, found by file id when a file is
 * deleted. An inline image is not in the body: the body keeps the answer around it and
 * `inline_files` says which stored file goes where.
 *
 * Clock: the `now` passed in, else the database's (shared by every replica; on the data dir this
 * machine's). The claim's times were computed from the caller's clock: they are kept as durations
 * and re-based on that clock, so a replica whose clock is off does not shorten or lengthen leases
 * and expiries.
 */
import type { SqlAdapter } from '../db/sql-adapter';
import { sweepRows } from '../db/sweep';
import {
	RELEASE_SQL,
	sweepableSql,
	takeableSql,
	type ClaimOutcome,
	type IdempotencyClaim,
	type IdempotencyStore,
	type InlineFilePart,
	type StoredAnswer,
} from './idempotency-store';

interface HeldRow {
	fingerprint: string;
	/** Booleans as the driver gives them (SQLite: 0 or 1). */
	completed: boolean | number;
	takeable: boolean | number;
}

interface AnswerRow {
	status: number;
	content_type: string;
	body: string;
	/** `StoredAnswer.inlineFiles` (PostgreSQL's jsonb parsed, SQLite's JSON as text); NULL when the answer has none. */
	inline_files: InlineFilePart[] | string | null;
}

const HELD = `SELECT fingerprint, completed, ${takeableSql('$3', '$4')} AS takeable FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`;
const FORGET_TAKEABLE = `DELETE FROM idempotency_keys WHERE api_key_id = $1 AND key = $2 AND ${takeableSql('$3', '$4')}`;
const INSERT = `INSERT INTO idempotency_keys (api_key_id, key, fingerprint, lease_until, expires_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (api_key_id, key) DO NOTHING`;
// First answer wins: a slow run that lost its lease must not replace what was replayed.
const COMPLETE = `UPDATE idempotency_keys SET completed = true, status = $3, content_type = $4, body = $5, inline_files = $6
	WHERE api_key_id = $1 AND key = $2 AND NOT completed`;
const ADD_FILE = `INSERT INTO idempotency_files (answer_id, position, file_id)
	SELECT id, CAST($3 AS integer), $4 FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`;
const ANSWER = 'SELECT status, content_type, body, inline_files FROM idempotency_keys WHERE api_key_id = $1 AND key = $2 AND fingerprint = $3 AND completed';
const ANSWER_FILES = `SELECT file.file_id FROM idempotency_files file JOIN idempotency_keys held ON held.id = file.answer_id
	WHERE held.api_key_id = $1 AND held.key = $2 AND held.fingerprint = $3 AND held.completed ORDER BY file.position`;
const FORGET_FILE = `DELETE FROM idempotency_keys
	WHERE api_key_id = $1 AND completed AND id IN (SELECT answer_id FROM idempotency_files WHERE file_id = $2)`;

/** A claim races at most a release, an expiry, a sweep or a forgotten file per attempt; this many in a row is a bug. */
const CLAIM_ATTEMPTS = 5;

export class SqlIdempotencyStore implements IdempotencyStore {
	constructor(private readonly adapter: SqlAdapter) {}

	async claim(claim: IdempotencyClaim, now?: Date): Promise<ClaimOutcome> {
		const reference = now ?? new Date();
		const at = now ?? (await this.adapter.now());
		const rebased = (time: Date) => new Date(at.getTime() + (time.getTime() - reference.getTime()));
		const { apiKeyId, key, fingerprint } = claim;
		for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
			const held = await this.adapter.one<HeldRow>(HELD, [apiKeyId, key, at, fingerprint]);
			if (held && !truthy(held.takeable)) {
				if (held.fingerprint !== fingerprint) return { state: 'mismatch' };
				if (!truthy(held.completed)) return { state: 'in_progress' };
				const answer = await this.answer(claim);
				if (answer) return { state: 'replay', answer };
				// Swept or forgotten between the decision and the read: decide again.
				continue;
			}
			const { changes } = await this.adapter.write([
				{ sql: FORGET_TAKEABLE, values: [apiKeyId, key, at, fingerprint] },
				{ sql: INSERT, values: [apiKeyId, key, fingerprint, rebased(claim.leaseUntil), rebased(claim.expiresAt)] },
			]);
			if (changes === 1) return { state: 'claimed' };
			// Another claim got there first: read what it holds.
		}
		throw new Error(`idempotency key could not be claimed after ${CLAIM_ATTEMPTS} attempts`);
	}

	async complete(apiKeyId: string, key: string, answer: StoredAnswer): Promise<void> {
		// The body goes in as text, never as a Buffer (and comes back as text): a Buffer of a few MB
		// lives outside the heap until V8's next collection, dead copies adding up under inline answers.
		const inlineFiles = answer.inlineFiles?.length ? JSON.stringify(answer.inlineFiles) : null;
		await this.adapter.write([
			{ sql: COMPLETE, values: [apiKeyId, key, answer.status, answer.contentType, answer.body, inlineFiles] },
			// Only when this answer was the one stored (each insert changes a row, so the next runs too).
			...(answer.fileIds ?? []).map((fileId, position) => ({ sql: ADD_FILE, values: [apiKeyId, key, position, fileId], ifChanged: true })),
		]);
	}

	async release(apiKeyId: string, key: string): Promise<void> {
		await this.adapter.write([{ sql: RELEASE_SQL, values: [apiKeyId, key] }]);
	}

	async forgetFile(apiKeyId: string, fileId: string): Promise<number> {
		return (await this.adapter.write([{ sql: FORGET_FILE, values: [apiKeyId, fileId] }])).changes;
	}

	/** In batches, each its own short write, then gives the freed space back. */
	async sweep(now?: Date): Promise<number> {
		return sweepRows(this.adapter, 'idempotency_keys', sweepableSql('$1'), [now ?? (await this.adapter.now())]);
	}

	/**
	 * The stored answer of a completed claim, if it is still there. Its file ids are read first: an
	 * answer deleted in between (swept, or a file of it forgotten) then reads as none, never as an
	 * answer without its files.
	 */
	private async answer({ apiKeyId, key, fingerprint }: IdempotencyClaim): Promise<StoredAnswer | undefined> {
		const files = await this.adapter.all<{ file_id: string }>(ANSWER_FILES, [apiKeyId, key, fingerprint]);
		const row = await this.adapter.one<AnswerRow>(ANSWER, [apiKeyId, key, fingerprint]);
		if (!row) return undefined;
		const answer: StoredAnswer = { status: row.status, contentType: row.content_type, body: row.body };
		if (files.length > 0) answer.fileIds = files.map((file) => file.file_id);
		const inlineFiles = typeof row.inline_files === 'string' ? (JSON.parse(row.inline_files) as InlineFilePart[]) : row.inline_files;
		if (inlineFiles?.length) answer.inlineFiles = inlineFiles;
		return answer;
	}
}

function truthy(value: boolean | number): boolean {
	return value === true || value === 1;
}
