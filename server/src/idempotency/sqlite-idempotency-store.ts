/**
 * Idempotency keys in the data dir's SQLite database, shared by every process on the data dir.
 * A claim is decided in one IMMEDIATE transaction (it holds the write lock from its first read),
 * so two processes never both claim a key. The answer's body (text in a BLOB column) is read only for a replay,
 * after the decision, so neither the heap nor the write lock carries it; the ids of the files an
 * answer points at are rows of `idempotency_files`, found by file id when a file is deleted. An
 * inline image is not in the body: the body keeps the answer around it and `inline_files` says
 * which stored file goes where.
 *
 * Clock: the `now` passed in, else this machine's (shared by every process on one data dir).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { whenUnlocked } from '../db/sqlite/busy';
import { bindNumbered, type SqliteDatabase } from '../db/sqlite/database';
import { releaseFreePages } from '../db/sqlite/free-pages';
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

/** Rows deleted per transaction by a sweep: the write lock is never held for long. */
export const SWEEP_BATCH = 500;

interface HeldRow {
	id: number;
	fingerprint: string;
	completed: number;
	takeable: number;
}

interface AnswerRow {
	id: number;
	status: number;
	content_type: string;
	body: string;
	/** JSON of `StoredAnswer.inlineFiles`; NULL when the answer has none (and on rows written before there were any). */
	inline_files: string | null;
}

/** A replay races at most a sweep or a forgotten file per attempt; this many in a row is a bug. */
const CLAIM_ATTEMPTS = 5;

export class SqliteIdempotencyStore implements IdempotencyStore {
	private readonly statements;
	private readonly decide: (claim: IdempotencyClaim, now: number) => ClaimOutcome['state'];
	private readonly completeAnswer: (apiKeyId: string, key: string, answer: StoredAnswer) => void;
	private readonly readAnswer: (claim: IdempotencyClaim) => StoredAnswer | undefined;

	constructor(private readonly database: SqliteDatabase) {
		this.statements = {
			held: database.prepare<[Record<string, unknown>], HeldRow>(
				`SELECT id, fingerprint, completed, ${takeableSql('$3', '$4')} AS takeable FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`,
			),
			forgetRow: database.prepare('DELETE FROM idempotency_keys WHERE id = ?'),
			insert: database.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, lease_until, expires_at) VALUES (?, ?, ?, ?, ?)'),
			answer: database.prepare<[string, string, string], AnswerRow>(
				'SELECT id, status, content_type, body, inline_files FROM idempotency_keys WHERE api_key_id = ? AND key = ? AND fingerprint = ? AND completed = 1',
			),
			fileIds: database.prepare<[number], { file_id: string }>('SELECT file_id FROM idempotency_files WHERE answer_id = ? ORDER BY position'),
			complete: database.prepare<[number, string, string, string | null, string, string], { id: number }>(
				'UPDATE idempotency_keys SET completed = 1, status = ?, content_type = ?, body = ?, inline_files = ? WHERE api_key_id = ? AND key = ? AND completed = 0 RETURNING id',
			),
			addFile: database.prepare('INSERT INTO idempotency_files (answer_id, position, file_id) VALUES (?, ?, ?)'),
			release: database.prepare(RELEASE_SQL),
			forgetFile: database.prepare(
				`DELETE FROM idempotency_keys
				WHERE api_key_id = ? AND completed = 1 AND id IN (SELECT answer_id FROM idempotency_files WHERE file_id = ?)`,
			),
			sweep: database.prepare(
				`DELETE FROM idempotency_keys WHERE id IN (
					SELECT id FROM idempotency_keys WHERE ${sweepableSql('@now')} LIMIT @limit
				)`,
			),
		};
		this.decide = database.transaction((claim: IdempotencyClaim, now: number): ClaimOutcome['state'] => {
			const held = this.statements.held.get(bindNumbered([claim.apiKeyId, claim.key, now, claim.fingerprint]));
			if (held && !held.takeable) {
				if (held.fingerprint !== claim.fingerprint) return 'mismatch';
				return held.completed === 1 ? 'replay' : 'in_progress';
			}
			// Expired, or abandoned by a dead process: its answer and file ids go with it.
			if (held) this.statements.forgetRow.run(held.id);
			this.statements.insert.run(claim.apiKeyId, claim.key, claim.fingerprint, claim.leaseUntil.getTime(), claim.expiresAt.getTime());
			return 'claimed';
		}).immediate;
		this.completeAnswer = database.transaction((apiKeyId: string, key: string, answer: StoredAnswer) => {
			// First answer wins: a slow run that lost its lease must not replace what was replayed.
			// The body goes in as text, not as a Buffer (and comes back as a string): a Buffer of a
			// few MB lives outside the heap until V8's next collection, and under inline answers
			// those dead copies were tens of MB of resident memory (bench/idempotency-memory.mjs).
			const inlineFiles = answer.inlineFiles?.length ? JSON.stringify(answer.inlineFiles) : null;
			const row = this.statements.complete.get(answer.status, answer.contentType, answer.body, inlineFiles, apiKeyId, key);
			if (!row) return;
			(answer.fileIds ?? []).forEach((fileId, position) => this.statements.addFile.run(row.id, position, fileId));
		}).immediate;
		// One snapshot: the body and its file ids belong to the same answer.
		this.readAnswer = database.transaction((claim: IdempotencyClaim): StoredAnswer | undefined => {
			const row = this.statements.answer.get(claim.apiKeyId, claim.key, claim.fingerprint);
			if (!row) return undefined;
			const answer: StoredAnswer = { status: row.status, contentType: row.content_type, body: row.body };
			if (row.inline_files !== null) answer.inlineFiles = JSON.parse(row.inline_files) as InlineFilePart[];
			const fileIds = this.statements.fileIds.all(row.id).map((file) => file.file_id);
			if (fileIds.length > 0) answer.fileIds = fileIds;
			return answer;
		}).deferred;
	}

	async claim(claim: IdempotencyClaim, now: Date = new Date()): Promise<ClaimOutcome> {
		for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
			const state = await whenUnlocked(this.database, () => this.decide(claim, now.getTime()));
			if (state !== 'replay') return { state };
			const answer = await whenUnlocked(this.database, () => this.readAnswer(claim));
			if (answer) return { state: 'replay', answer };
			// Swept or forgotten between the decision and the read: decide again.
		}
		throw new Error(`idempotency key could not be claimed after ${CLAIM_ATTEMPTS} attempts`);
	}

	async complete(apiKeyId: string, key: string, answer: StoredAnswer): Promise<void> {
		await whenUnlocked(this.database, () => this.completeAnswer(apiKeyId, key, answer));
	}

	async release(apiKeyId: string, key: string): Promise<void> {
		await whenUnlocked(this.database, () => this.statements.release.run(bindNumbered([apiKeyId, key])));
	}

	async forgetFile(apiKeyId: string, fileId: string): Promise<number> {
		return (await whenUnlocked(this.database, () => this.statements.forgetFile.run(apiKeyId, fileId))).changes;
	}

	/** In batches, each its own short transaction, then gives the freed pages back. */
	async sweep(now: Date = new Date()): Promise<number> {
		let removed = 0;
		for (;;) {
			const { changes } = await whenUnlocked(this.database, () => this.statements.sweep.run({ now: now.getTime(), limit: SWEEP_BATCH }));
			removed += changes;
			if (changes < SWEEP_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await releaseFreePages(this.database);
		return removed;
	}
}
