/**
 * Idempotency keys in PostgreSQL, so a retry that lands on another replica finds the first
 * request's claim or answer. A claim is one upsert: it inserts the key, or takes over a row that
 * expired or whose running request stopped renewing its lease (a dead replica); a row that is
 * neither is left alone and read back to say why the claim was refused.
 *
 * Clock: the `now` passed in, else the database's (shared by every replica), as for file metadata.
 */
import type { Pool } from 'pg';
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
	completed: boolean;
	status: number | null;
	content_type: string | null;
	body: string | null;
	file_ids: string[] | null;
	/** `StoredAnswer.inlineFiles`; NULL when the answer has none (and on rows written before there were any). */
	inline_files: InlineFilePart[] | null;
	takeable: boolean;
}

const NOW = (parameter: string) => `COALESCE(${parameter}::timestamptz, now())`;

const CLAIM = `
	INSERT INTO idempotency_keys AS held (api_key_id, key, fingerprint, lease_until, expires_at)
	VALUES ($1, $2, $3,
		$4::timestamptz - $7::timestamptz + COALESCE($6::timestamptz, now()),
		$5::timestamptz - $7::timestamptz + COALESCE($6::timestamptz, now()))
	ON CONFLICT (api_key_id, key) DO UPDATE
	SET fingerprint = EXCLUDED.fingerprint, completed = false, lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at,
		status = NULL, content_type = NULL, body = NULL, inline_files = NULL
	WHERE ${takeableSql(NOW('$6'), 'EXCLUDED.fingerprint', 'held')}
	RETURNING 1`;

const READ = `
	SELECT fingerprint, completed, status, content_type, body, file_ids, inline_files, ${takeableSql(NOW('$3'), '$4::text')} AS takeable
	FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`;

/** A claim races at most a release or an expiry per attempt; this many in a row is a bug. */
const CLAIM_ATTEMPTS = 5;

export class PgIdempotencyStore implements IdempotencyStore {
	constructor(private readonly pool: Pool) {}

	async claim(claim: IdempotencyClaim, now?: Date): Promise<ClaimOutcome> {
		for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
			// The claim's times were computed from the caller's clock: kept as durations and re-based
			// on the database's (or on `now` when given), so a replica whose clock is off does not
			// shorten or lengthen leases and expiries.
			const reference = now ?? new Date();
			const inserted = await this.pool.query(CLAIM, [claim.apiKeyId, claim.key, claim.fingerprint, claim.leaseUntil, claim.expiresAt, now ?? null, reference]);
			if (inserted.rowCount === 1) return { state: 'claimed' };
			const { rows } = await this.pool.query<HeldRow>(READ, [claim.apiKeyId, claim.key, now ?? null, claim.fingerprint]);
			const held = rows[0];
			// Released, expired or abandoned between the two statements: claim again.
			if (!held || held.takeable) continue;
			if (held.fingerprint !== claim.fingerprint) return { state: 'mismatch' };
			if (held.completed) {
				const answer: StoredAnswer = { status: held.status!, contentType: held.content_type!, body: held.body! };
				if (held.file_ids?.length) answer.fileIds = held.file_ids;
				if (held.inline_files?.length) answer.inlineFiles = held.inline_files;
				return { state: 'replay', answer };
			}
			return { state: 'in_progress' };
		}
		throw new Error(`idempotency key could not be claimed after ${CLAIM_ATTEMPTS} attempts`);
	}

	async complete(apiKeyId: string, key: string, answer: StoredAnswer): Promise<void> {
		await this.pool.query(
			'UPDATE idempotency_keys SET completed = true, status = $3, content_type = $4, body = $5, file_ids = $6, inline_files = $7 WHERE api_key_id = $1 AND key = $2 AND NOT completed',
			[apiKeyId, key, answer.status, answer.contentType, answer.body, answer.fileIds ?? [], answer.inlineFiles?.length ? JSON.stringify(answer.inlineFiles) : null],
		);
	}

	async release(apiKeyId: string, key: string): Promise<void> {
		await this.pool.query(RELEASE_SQL, [apiKeyId, key]);
	}

	async forgetFile(apiKeyId: string, fileId: string): Promise<number> {
		const { rowCount } = await this.pool.query('DELETE FROM idempotency_keys WHERE api_key_id = $1 AND completed AND file_ids @> ARRAY[$2::text]', [apiKeyId, fileId]);
		return rowCount ?? 0;
	}

	async sweep(now?: Date): Promise<number> {
		const { rowCount } = await this.pool.query(`DELETE FROM idempotency_keys WHERE ${sweepableSql(NOW('$1'))}`, [now ?? null]);
		return rowCount ?? 0;
	}
}
