/**
 * The embedded idempotency store, for one process per data dir (a fleet uses PostgreSQL).
 *
 * Answers stay out of the heap: each completed answer's body is a file
 * `<data-dir>/idempotency/<ref>` (written aside and renamed), and memory holds only a small index
 * record per key (fingerprint, expiry, status, content type, body reference and size, the file ids
 * it points at). The index is journalled in `<data-dir>/idempotency.jsonl`: one line per completed
 * answer, one per answer forgotten because its file was deleted. Claims still running are not
 * written: a restart means their process died, and the repeat runs again.
 *
 * The journal is read as a stream at start (a torn last line is skipped), and rewritten without
 * expired or forgotten answers (aside, synced, renamed) when opened and whenever most of its lines
 * are dead, so it does not grow without bound. Body files nobody refers to (a crash between the
 * body and its journal line) are removed at start. A body whose size does not match its record
 * (lost in a crash) counts as never stored: the repeat runs again rather than replaying damage.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, renameSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { replaceWithLines } from '../durable/replace-with-lines';
import type { ClaimOutcome, IdempotencyClaim, IdempotencyStore, StoredAnswer } from './idempotency-store';

export const IDEMPOTENCY_JOURNAL = 'idempotency.jsonl';
export const IDEMPOTENCY_BODIES = 'idempotency';

/** What memory keeps of a completed answer: everything but the body, which is on disk. */
interface AnswerRecord {
	status: number;
	contentType: string;
	/** Body file name under IDEMPOTENCY_BODIES. */
	ref: string;
	/** Body size in bytes (UTF-8), checked on every read. */
	size: number;
	fileIds: readonly string[];
}

interface Entry {
	fingerprint: string;
	expiresAt: number;
	leaseUntil: number;
	answer?: AnswerRecord;
	/** `complete` is writing the body: a second completion of the key is ignored (first answer wins). */
	completing?: boolean;
}

/** A completed answer in the journal. */
interface AnswerLine {
	apiKeyId: string;
	key: string;
	fingerprint: string;
	expiresAt: string;
	status: number;
	contentType: string;
	ref: string;
	size: number;
	fileIds: string[];
}

/** The answer of a key was forgotten (its file deleted). */
interface ForgetLine {
	forget: true;
	apiKeyId: string;
	key: string;
}

/** A line written before bodies moved out of the journal: read once, then rewritten. */
interface LegacyLine {
	apiKeyId: string;
	key: string;
	fingerprint: string;
	expiresAt: string;
	answer: { status: number; contentType: string; body: string };
}

const REF = /^[0-9a-f]{32}$/;

export class MemoryIdempotencyStore implements IdempotencyStore {
	private readonly entries = new Map<string, Entry>();

	/** Lines in the journal file, live or not: compaction pays off once most are dead. */
	private journalLines = 0;

	/** Appends and rewrites of the journal, in order, so a rewrite never loses an append. */
	private writes: Promise<void> = Promise.resolve();

	/** Content types repeat; one string each instead of one per record. */
	private readonly contentTypes = new Map<string, string>();

	private readonly bodies: string;

	private constructor(
		private readonly file: string,
		dataDir: string,
	) {
		this.bodies = join(dataDir, IDEMPOTENCY_BODIES);
	}

	static async open(dataDir: string, now: Date = new Date()): Promise<MemoryIdempotencyStore> {
		const store = new MemoryIdempotencyStore(join(dataDir, IDEMPOTENCY_JOURNAL), dataDir);
		await mkdir(store.bodies, { recursive: true, mode: 0o700 });
		const { lines, clean } = await store.load(now.getTime());
		store.journalLines = lines;
		if (!clean || lines > store.answerCount()) await store.rewriteJournal();
		await store.removeUnreferencedBodies();
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
			if (existing.answer) {
				const answer = await this.readAnswer(existing.answer);
				if (answer) return { state: 'replay', answer };
				// Swept, forgotten or lost meanwhile: the repeat runs again.
				if (this.entries.get(id) === existing) this.entries.delete(id);
				return this.claim(claim, now);
			}
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
		if (!entry || entry.answer || entry.completing) return;
		entry.completing = true;
		const record: AnswerRecord = {
			status: answer.status,
			contentType: this.intern(answer.contentType),
			ref: randomBytes(16).toString('hex'),
			size: Buffer.byteLength(answer.body, 'utf8'),
			fileIds: [...(answer.fileIds ?? [])],
		};
		const line: AnswerLine = { apiKeyId, key, fingerprint: entry.fingerprint, expiresAt: new Date(entry.expiresAt).toISOString(), ...record, fileIds: [...record.fileIds] };
		try {
			await this.writeBody(record.ref, answer.body);
			await this.enqueue(async () => {
				await appendFile(this.file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
				this.journalLines++;
				// Set within the write, so a rewrite queued behind it keeps the answer.
				entry.answer = record;
			});
		} catch (error) {
			await unlink(this.bodyPath(record.ref)).catch(() => undefined);
			throw error;
		} finally {
			entry.completing = false;
		}
	}

	async release(apiKeyId: string, key: string): Promise<void> {
		const id = entryKey(apiKeyId, key);
		// Only a running claim can fail; a stored answer stays until it expires.
		const entry = this.entries.get(id);
		if (entry && entry.answer === undefined && !entry.completing) this.entries.delete(id);
	}

	async forgetFile(apiKeyId: string, fileId: string): Promise<number> {
		const prefix = entryKey(apiKeyId, '');
		const forgotten: Array<[string, AnswerRecord]> = [];
		for (const [id, entry] of this.entries) {
			if (entry.answer && id.startsWith(prefix) && entry.answer.fileIds.includes(fileId)) forgotten.push([id, entry.answer]);
		}
		if (forgotten.length === 0) return 0;
		for (const [id] of forgotten) this.entries.delete(id);
		// Journalled before the bodies go: after a crash the answer stays forgotten.
		const text = forgotten.map(([id]) => `${JSON.stringify({ forget: true, ...splitKey(id) } satisfies ForgetLine)}\n`).join('');
		await this.enqueue(async () => {
			await appendFile(this.file, text, { mode: 0o600 });
			this.journalLines += forgotten.length;
		});
		await Promise.all(forgotten.map(([, record]) => unlink(this.bodyPath(record.ref)).catch(() => undefined)));
		return forgotten.length;
	}

	async sweep(now: Date = new Date()): Promise<number> {
		const expired: AnswerRecord[] = [];
		let removed = 0;
		for (const [id, entry] of this.entries) {
			if (entry.expiresAt <= now.getTime() && !entry.completing) {
				this.entries.delete(id);
				if (entry.answer) expired.push(entry.answer);
				removed++;
			}
		}
		// The journal first: a crash after it never leaves a line pointing at a removed body that
		// would still count as live (expired lines are skipped on load anyway).
		if (this.journalLines > 2 * this.answerCount() + 16) await this.rewriteJournal();
		for (const record of expired) await unlink(this.bodyPath(record.ref)).catch(() => undefined);
		return removed;
	}

	async close(): Promise<void> {
		await this.writes;
	}

	/** Streams the journal into the index; answers how many lines it had and whether all were live and whole. */
	private async load(now: number): Promise<{ lines: number; clean: boolean }> {
		let lines = 0;
		let clean = true;
		const input = createReadStream(this.file);
		const missing = new Promise<boolean>((resolve) => {
			input.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ENOENT'));
			input.once('open', () => resolve(false));
		});
		if (await missing) return { lines, clean };
		const reader = createInterface({ input, crlfDelay: Infinity });
		for await (const raw of reader) {
			if (!raw.trim()) continue;
			lines++;
			const line = parseLine(raw);
			if (!line) {
				// A crash mid-append leaves at most one torn line: skipped, and gone with the rewrite.
				clean = false;
				continue;
			}
			const id = entryKey(line.apiKeyId, line.key);
			if ('forget' in line) {
				this.entries.delete(id);
				clean = false;
				continue;
			}
			if (Date.parse(line.expiresAt) <= now) {
				clean = false;
				continue;
			}
			// First answer wins, as it did in memory when two runs of one key both completed.
			if (this.entries.has(id)) continue;
			let record: AnswerRecord;
			if ('answer' in line) {
				// An answer from before bodies moved out of the journal: its body moves now.
				clean = false;
				const { status, contentType, body } = line.answer;
				record = { status, contentType: this.intern(contentType), ref: randomBytes(16).toString('hex'), size: Buffer.byteLength(body, 'utf8'), fileIds: [] };
				// Synchronously, at start only: an await here lets readline read ahead and queue the
				// whole journal in memory, which is what streaming it is meant to avoid.
				const path = this.bodyPath(record.ref);
				writeFileSync(`${path}.tmp`, body, { encoding: 'utf8', mode: 0o600 });
				renameSync(`${path}.tmp`, path);
			} else {
				record = { status: line.status, contentType: this.intern(line.contentType), ref: line.ref, size: line.size, fileIds: line.fileIds };
			}
			this.entries.set(id, { fingerprint: line.fingerprint, expiresAt: Date.parse(line.expiresAt), leaseUntil: 0, answer: record });
		}
		return { lines, clean: clean && (lines === 0 || (await endsWithNewline(this.file))) };
	}

	private async readAnswer(record: AnswerRecord): Promise<StoredAnswer | undefined> {
		let bytes: Buffer;
		try {
			bytes = await readFile(this.bodyPath(record.ref));
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
			throw error;
		}
		if (bytes.length !== record.size) return undefined;
		const answer: StoredAnswer = { status: record.status, contentType: record.contentType, body: bytes.toString('utf8') };
		if (record.fileIds.length > 0) answer.fileIds = record.fileIds;
		return answer;
	}

	/** Written aside and renamed: a body file is whole or absent. */
	private async writeBody(ref: string, body: string): Promise<void> {
		const path = this.bodyPath(ref);
		const temp = `${path}.tmp`;
		await writeFile(temp, body, { encoding: 'utf8', mode: 0o600 });
		await rename(temp, path);
	}

	private bodyPath(ref: string): string {
		return join(this.bodies, ref);
	}

	/** Bodies without a live record: left by a crash between body and journal, or by expiry. */
	private async removeUnreferencedBodies(): Promise<void> {
		const live = new Set<string>();
		for (const entry of this.entries.values()) if (entry.answer) live.add(entry.answer.ref);
		for (const name of await readdir(this.bodies)) {
			if (!live.has(name)) await unlink(join(this.bodies, name)).catch(() => undefined);
		}
	}

	private answerCount(): number {
		let count = 0;
		for (const entry of this.entries.values()) if (entry.answer) count++;
		return count;
	}

	/**
	 * Replaces the journal with the live answers, in batches (never one big string); written
	 * aside, synced and renamed, so a crash keeps one whole file, old or new.
	 */
	private rewriteJournal(): Promise<void> {
		return this.enqueue(async () => {
			this.journalLines = await replaceWithLines(this.file, this.liveAnswerLines());
		});
	}

	private *liveAnswerLines(): Generator<string> {
		for (const [id, entry] of this.entries) {
			if (!entry.answer) continue;
			const line: AnswerLine = {
				...splitKey(id),
				fingerprint: entry.fingerprint,
				expiresAt: new Date(entry.expiresAt).toISOString(),
				...entry.answer,
				fileIds: [...entry.answer.fileIds],
			};
			yield JSON.stringify(line);
		}
	}

	private intern(contentType: string): string {
		const known = this.contentTypes.get(contentType);
		if (known !== undefined) return known;
		if (this.contentTypes.size < 64) this.contentTypes.set(contentType, contentType);
		return contentType;
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

function splitKey(id: string): { apiKeyId: string; key: string } {
	const at = id.indexOf('\u0000');
	return { apiKeyId: id.slice(0, at), key: id.slice(at + 1) };
}

async function endsWithNewline(file: string): Promise<boolean> {
	const handle = await open(file, 'r');
	try {
		const { size } = await handle.stat();
		if (size === 0) return true;
		const last = Buffer.alloc(1);
		await handle.read(last, 0, 1, size - 1);
		return last[0] === 0x0a;
	} finally {
		await handle.close();
	}
}

function parseLine(raw: string): AnswerLine | ForgetLine | LegacyLine | undefined {
	let line: Record<string, unknown>;
	try {
		line = JSON.parse(raw) as Record<string, unknown>;
	} catch {
		return undefined;
	}
	if (typeof line !== 'object' || line === null || typeof line.apiKeyId !== 'string' || typeof line.key !== 'string') return undefined;
	if (line.forget === true) return line as unknown as ForgetLine;
	if (typeof line.fingerprint !== 'string' || typeof line.expiresAt !== 'string' || Number.isNaN(Date.parse(line.expiresAt))) return undefined;
	const answer = line.answer as Record<string, unknown> | undefined;
	if (typeof answer === 'object' && answer !== null) {
		const valid = Number.isInteger(answer.status) && typeof answer.contentType === 'string' && typeof answer.body === 'string';
		return valid ? (line as unknown as LegacyLine) : undefined;
	}
	const valid =
		Number.isInteger(line.status) &&
		typeof line.contentType === 'string' &&
		typeof line.ref === 'string' &&
		REF.test(line.ref) &&
		Number.isInteger(line.size) &&
		Array.isArray(line.fileIds) &&
		line.fileIds.every((fileId) => typeof fileId === 'string');
	return valid ? (line as unknown as AnswerLine) : undefined;
}
