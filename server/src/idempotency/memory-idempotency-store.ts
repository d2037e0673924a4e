/**
 * The embedded idempotency store: claims live in memory; every completed answer is also appended
 * to `<data-dir>/idempotency.jsonl`, so a restart within the retention still replays it. Claims
 * still running are not written: a restart means their process died, and the repeat runs again.
 * One process per data dir (a fleet uses the PostgreSQL store). The journal is rewritten without
 * expired answers when opened, and again by `sweep` once most of its lines are dead.
 */
import { appendFile, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClaimOutcome, IdempotencyClaim, IdempotencyStore, StoredAnswer } from './idempotency-store';

export const IDEMPOTENCY_JOURNAL = 'idempotency.jsonl';

interface Entry {
	fingerprint: string;
	expiresAt: number;
	leaseUntil: number;
	answer?: StoredAnswer;
}

/** One journal line: a completed answer. */
interface JournalLine {
	apiKeyId: string;
	key: string;
	fingerprint: string;
	expiresAt: string;
	answer: StoredAnswer;
}

export class MemoryIdempotencyStore implements IdempotencyStore {
	private readonly entries = new Map<string, Entry>();

	/** Lines in the journal file, live or not: compaction pays off once most are dead. */
	private journalLines = 0;

	/** Appends and rewrites of the journal, in order, so a rewrite never loses an append. */
	private writes: Promise<void> = Promise.resolve();

	private constructor(private readonly file: string) {}

	static async open(dataDir: string, now: Date = new Date()): Promise<MemoryIdempotencyStore> {
		const store = new MemoryIdempotencyStore(join(dataDir, IDEMPOTENCY_JOURNAL));
		const text = await readFile(store.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
			if (error.code === 'ENOENT') return undefined;
			throw error;
		});
		if (text === undefined) return store;
		let lines = 0;
		for (const raw of text.split('\n')) {
			if (!raw.trim()) continue;
			lines++;
			const line = parseLine(raw);
			if (!line || Date.parse(line.expiresAt) <= now.getTime()) continue;
			const id = entryKey(line.apiKeyId, line.key);
			// First answer wins, as it did in memory when two runs of one key both completed.
			if (store.entries.has(id)) continue;
			store.entries.set(id, {
				fingerprint: line.fingerprint,
				expiresAt: Date.parse(line.expiresAt),
				leaseUntil: 0,
				answer: line.answer,
			});
		}
		store.journalLines = lines;
		if (lines > store.entries.size) await store.rewriteJournal();
		return store;
	}

	async claim(claim: IdempotencyClaim, now: Date = new Date()): Promise<ClaimOutcome> {
		const id = entryKey(claim.apiKeyId, claim.key);
		const existing = this.entries.get(id);
		const at = now.getTime();
		if (existing && existing.expiresAt > at) {
			// A dead claim with another body is still a reuse of the key: taking it over could
			// store one body's answer under the other's fingerprint if the first process was only slow.
			if (existing.fingerprint !== claim.fingerprint) return { state: 'mismatch' };
			if (existing.answer) return { state: 'replay', answer: existing.answer };
			if (existing.leaseUntil > at) return { state: 'in_progress' };
		}
		this.entries.set(id, {
			fingerprint: claim.fingerprint,
			expiresAt: claim.expiresAt.getTime(),
			leaseUntil: claim.leaseUntil.getTime(),
		});
		return { state: 'claimed' };
	}

	async complete(apiKeyId: string, key: string, answer: StoredAnswer): Promise<void> {
		const entry = this.entries.get(entryKey(apiKeyId, key));
		// First answer wins: a slow run that lost its lease must not replace what was replayed.
		if (!entry || entry.answer) return;
		const line: JournalLine = {
			apiKeyId,
			key,
			fingerprint: entry.fingerprint,
			expiresAt: new Date(entry.expiresAt).toISOString(),
			answer: { status: answer.status, contentType: answer.contentType, body: answer.body },
		};
		await this.enqueue(async () => {
			await appendFile(this.file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
			this.journalLines++;
		});
		entry.answer = line.answer;
	}

	async release(apiKeyId: string, key: string): Promise<void> {
		const id = entryKey(apiKeyId, key);
		// Only a running claim can fail; a stored answer stays until it expires.
		if (this.entries.get(id)?.answer === undefined) this.entries.delete(id);
	}

	async sweep(now: Date = new Date()): Promise<number> {
		let removed = 0;
		for (const [id, entry] of this.entries) {
			if (entry.expiresAt <= now.getTime()) {
				this.entries.delete(id);
				removed++;
			}
		}
		if (this.journalLines > 2 * this.answerCount() + 16) await this.rewriteJournal();
		return removed;
	}

	async close(): Promise<void> {
		await this.writes;
	}

	private answerCount(): number {
		let count = 0;
		for (const entry of this.entries.values()) if (entry.answer) count++;
		return count;
	}

	/** Replaces the journal with the live answers; written aside and renamed, so a crash keeps one whole file. */
	private rewriteJournal(): Promise<void> {
		return this.enqueue(async () => {
			const lines: string[] = [];
			for (const [id, entry] of this.entries) {
				if (!entry.answer) continue;
				const [apiKeyId, key] = splitKey(id);
				const line: JournalLine = {
					apiKeyId,
					key,
					fingerprint: entry.fingerprint,
					expiresAt: new Date(entry.expiresAt).toISOString(),
					answer: entry.answer,
				};
				lines.push(`${JSON.stringify(line)}\n`);
			}
			const temp = `${this.file}.${process.pid}.tmp`;
			await writeFile(temp, lines.join(''), { mode: 0o600 });
			await rename(temp, this.file);
			this.journalLines = lines.length;
		});
	}

	private enqueue(write: () => Promise<void>): Promise<void> {
		const next = this.writes.then(write);
		// A failed write fails its caller; later writes still run.
		this.writes = next.catch(() => undefined);
		return next;
	}
}

function entryKey(apiKeyId: string, key: string): string {
	// Keys are visible ASCII and API key ids never hold a NUL, so the pair stays unambiguous.
	return `${apiKeyId}\u0000${key}`;
}

function splitKey(id: string): [string, string] {
	const at = id.indexOf('\u0000');
	return [id.slice(0, at), id.slice(at + 1)];
}

function parseLine(raw: string): JournalLine | undefined {
	try {
		const line = JSON.parse(raw) as Partial<JournalLine>;
		const answer = line.answer as Partial<StoredAnswer> | undefined;
		const valid =
			typeof line.apiKeyId === 'string' &&
			typeof line.key === 'string' &&
			typeof line.fingerprint === 'string' &&
			typeof line.expiresAt === 'string' &&
			!Number.isNaN(Date.parse(line.expiresAt)) &&
			typeof answer === 'object' &&
			answer !== null &&
			Number.isInteger(answer.status) &&
			typeof answer.contentType === 'string' &&
			typeof answer.body === 'string';
		return valid ? (line as JournalLine) : undefined;
	} catch {
		// A crash mid-append leaves at most one torn line: skip it.
		return undefined;
	}
}
