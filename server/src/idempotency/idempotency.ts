/**
 * `Idempotency-Key` on POST requests, independent of the routes: parse the header, fingerprint
 * the request, and run it at most once per (API key, idempotency key) through an IdempotencyStore.
 * A repeat with the same body replays the first answer byte for byte and costs nothing; another
 * body is a 422; a repeat while the first still runs waits for it, or is a 409 after `waitMs`.
 */
import { createHash, type Hash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError, invalidField } from '../../../core/errors';
import type { IdempotencyStore, StoredAnswer } from './idempotency-store';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
const PARAM = 'Idempotency-Key';
const MAX_KEY_LENGTH = 255;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * The key from the request header, or undefined when the header is absent. Throws a 400 naming
 * `Idempotency-Key` for an empty, overlong, repeated or non-visible-ASCII key.
 */
export function parseIdempotencyKey(header: string | readonly string[] | undefined): string | undefined {
	if (header === undefined) return undefined;
	if (typeof header !== 'string') {
		throw invalidField(PARAM, `'${PARAM}' was sent ${header.length} times; send it once`, 'duplicate_field');
	}
	if (header.length === 0) throw invalidField(PARAM, `'${PARAM}' is empty: give 1 to ${MAX_KEY_LENGTH} characters`, 'empty_value');
	if (header.length > MAX_KEY_LENGTH) {
		throw invalidField(PARAM, `'${PARAM}' is too long: at most ${MAX_KEY_LENGTH} characters; got ${header.length}`, 'too_long');
	}
	if (!VISIBLE_ASCII.test(header)) {
		throw invalidField(PARAM, `'${PARAM}' must consist of visible ASCII characters (no spaces or control characters)`, 'invalid_value');
	}
	return header;
}

/** SHA-256 (hex) of a request whose body is at hand as text or bytes. */
export function fingerprint(method: string, path: string, body: string | Uint8Array): string {
	return requestHash(method, path).update(body).digest('hex');
}

/**
 * SHA-256 (hex) of a request with a parsed JSON body. Keys are sorted first, so a client that
 * serialises the same request differently on a retry (key order, spacing) still matches.
 */
export function fingerprintJson(method: string, path: string, body: unknown): string {
	return fingerprint(method, path, canonicalJson(body));
}

/**
 * Fingerprint of a multipart request, fed part by part as it streams. It covers field names,
 * values and file bytes, not the raw body: a client's retry picks a new multipart boundary.
 */
export class FingerprintHasher {
	private readonly hash: Hash;

	private filePart: { name: string; hash: Hash } | undefined;

	constructor(method: string, path: string) {
		this.hash = requestHash(method, path);
	}

	/** A text field. */
	field(name: string, value: string): this {
		this.endFile();
		this.hash.update(frame('T', name)).update(frame('V', value));
		return this;
	}

	/** Starts a file part; its bytes follow through `update`. */
	file(name: string): this {
		this.endFile();
		this.filePart = { name, hash: createHash('sha256') };
		return this;
	}

	update(chunk: Uint8Array): this {
		if (!this.filePart) throw new Error('FingerprintHasher.update() needs a file() part first');
		this.filePart.hash.update(chunk);
		return this;
	}

	digest(): string {
		this.endFile();
		return this.hash.digest('hex');
	}

	private endFile(): void {
		if (!this.filePart) return;
		this.hash.update(frame('F', this.filePart.name)).update(frame('D', this.filePart.hash.digest('hex')));
		this.filePart = undefined;
	}
}

export interface RunIdempotentOptions {
	store: IdempotencyStore;
	apiKeyId: string;
	key: string;
	fingerprint: string;
	/** How long a completed answer is replayed. */
	retentionSeconds: number;
	/**
	 * How long a running claim holds the key before another request may take it over as abandoned.
	 * Longer than the slowest request can take (the upstream time-out), or a slow run is repeated.
	 */
	leaseMs: number;
	/** How long a repeat waits for a running first request before answering 409. */
	waitMs: number;
	/** First pause between looks at a running claim; doubles up to a second. */
	pollMs?: number;
	/** Stops waiting (the client left). A claimed run is not cancelled: its answer is stored for the retry. */
	signal?: AbortSignal;
	/** The request itself. What it answers is stored and replayed; what it throws is not stored. */
	run: () => Promise<StoredAnswer>;
	/** Told when the store fails after the run succeeded; the answer is still given. */
	onStoreError?: (error: unknown) => void;
	/**
	 * Which of a replay's files are gone (expired, or deleted without the store hearing of it). Such
	 * an answer is forgotten and the request runs again: a URL that is 404 is no answer to replay.
	 */
	goneFiles?: (fileIds: readonly string[]) => Promise<readonly string[]>;
}

export interface IdempotentAnswer extends StoredAnswer {
	/** True when this is the stored answer of an earlier request (`Idempotent-Replayed: true`). */
	replayed: boolean;
}

const MAX_POLL_MS = 1000;
/** A stale replay is forgotten and the key claimed again; more than this many in a row is a bug. */
const MAX_STALE_REPLAYS = 3;

export async function runIdempotent(options: RunIdempotentOptions): Promise<IdempotentAnswer> {
	const { store, apiKeyId, key } = options;
	const waitUntil = Date.now() + options.waitMs;
	let pause = options.pollMs ?? 50;
	let staleReplays = 0;
	for (;;) {
		const now = new Date();
		const outcome = await store.claim(
			{
				apiKeyId,
				key,
				fingerprint: options.fingerprint,
				expiresAt: new Date(now.getTime() + options.retentionSeconds * 1000),
				leaseUntil: new Date(now.getTime() + options.leaseMs),
			},
			// No instant passed: the store judges by its own clock (PostgreSQL: the database's, shared by every replica).
		);
		switch (outcome.state) {
			case 'claimed':
				return runClaimed(options);
			case 'replay': {
				const gone = options.goneFiles && outcome.answer.fileIds?.length ? await options.goneFiles(outcome.answer.fileIds) : [];
				if (gone.length === 0) return sentAnswer(outcome.answer, true);
				if (++staleReplays > MAX_STALE_REPLAYS) throw new Error(`an idempotent answer pointing at gone files could not be forgotten after ${MAX_STALE_REPLAYS} attempts`);
				for (const fileId of gone) await store.forgetFile(apiKeyId, fileId);
				break;
			}
			case 'mismatch':
				throw new ImageGenError(
					422,
					`This ${PARAM} was already used with a different request; use a new key for a new request`,
					{ param: PARAM, code: 'idempotency_key_reused' },
				);
			case 'in_progress': {
				const left = waitUntil - Date.now();
				if (left <= 0) {
					throw new ImageGenError(409, `A request with this ${PARAM} is still running; retry in a moment to get its answer`, {
						param: PARAM,
						code: 'idempotency_in_progress',
						retryAfterSeconds: 1,
					});
				}
				await sleep(Math.min(pause, left), undefined, { signal: options.signal });
				pause = Math.min(pause * 2, MAX_POLL_MS);
			}
		}
	}
}

async function runClaimed(options: RunIdempotentOptions): Promise<IdempotentAnswer> {
	const { store, apiKeyId, key } = options;
	let answer: StoredAnswer;
	try {
		answer = await options.run();
	} catch (error) {
		// A failed first request is not stored: its repeat runs again.
		await store.release(apiKeyId, key).catch((releaseError: unknown) => options.onStoreError?.(releaseError));
		throw error;
	}
	try {
		await store.complete(apiKeyId, key, answer);
	} catch (error) {
		// The work is done and the caller gets it; a repeat will run again rather than wait for a lease.
		options.onStoreError?.(error);
		await store.release(apiKeyId, key).catch(() => undefined);
	}
	// As the run made it but for the file ids: an image still in memory (a route's own field) goes out from there, not read back.
	const sent: IdempotentAnswer = { ...answer, replayed: false };
	delete sent.fileIds;
	return sent;
}

/** What the client gets: the answer without the file ids kept for the store. */
function sentAnswer(answer: StoredAnswer, replayed: boolean): IdempotentAnswer {
	const sent: IdempotentAnswer = { status: answer.status, contentType: answer.contentType, body: answer.body, replayed };
	if (answer.inlineFiles?.length) sent.inlineFiles = answer.inlineFiles;
	return sent;
}

/**
 * Ids of our hosted files in a route's answer (`imageUrl` / `videoUrl` of an upload, `data[].url`
 * of a generation). Only our own answer is walked, never client data.
 */
export function referencedFileIds(result: unknown): string[] {
	if (typeof result !== 'object' || result === null) return [];
	const record = result as Record<string, unknown>;
	const urls: unknown[] = [record.imageUrl, record.videoUrl, record.url];
	if (Array.isArray(record.data)) for (const item of record.data) if (typeof item === 'object' && item !== null) urls.push((item as Record<string, unknown>).url);
	const ids: string[] = [];
	for (const url of urls) {
		const match = typeof url === 'string' ? HOSTED_FILE_PATH.exec(url) : null;
		if (match) ids.push(match[1]!);
	}
	return ids;
}

const HOSTED_FILE_PATH = /\/files\/([A-Za-z0-9_-]{16,64})\.[A-Za-z0-9]+$/;

function requestHash(method: string, path: string): Hash {
	return createHash('sha256').update(frame('M', method.toUpperCase())).update(frame('P', path));
}

/** Tag and byte length before each value, so no two different sequences hash alike. */
function frame(tag: string, value: string): Buffer {
	const bytes = Buffer.from(value, 'utf8');
	const header = Buffer.alloc(5);
	header.write(tag, 0, 'latin1');
	header.writeUInt32BE(bytes.length, 1);
	return Buffer.concat([header, bytes]);
}

export function canonicalJson(root: unknown): string {
	// An explicit stack, not recursion: the client decides how deep a body is (50,000 nested arrays
	// must not overflow the call stack). Items are popped in writing order.
	const out: string[] = [];
	const stack: Array<{ text: string } | { value: unknown }> = [{ value: root }];
	const pushInOrder = (items: Array<{ text: string } | { value: unknown }>) => {
		for (let index = items.length - 1; index >= 0; index -= 1) stack.push(items[index]!);
	};
	while (stack.length > 0) {
		const item = stack.pop()!;
		if ('text' in item) {
			out.push(item.text);
			continue;
		}
		const { value } = item;
		if (Array.isArray(value)) {
			const items: Array<{ text: string } | { value: unknown }> = [{ text: '[' }];
			value.forEach((element: unknown, index) => {
				if (index > 0) items.push({ text: ',' });
				items.push({ value: element === undefined ? null : element });
			});
			items.push({ text: ']' });
			pushInOrder(items);
		} else if (typeof value === 'object' && value !== null) {
			const record = value as Record<string, unknown>;
			const names = Object.keys(record).filter((name) => record[name] !== undefined).sort();
			const items: Array<{ text: string } | { value: unknown }> = [{ text: '{' }];
			names.forEach((name, index) => {
				items.push({ text: `${index > 0 ? ',' : ''}${JSON.stringify(name)}:` }, { value: record[name] });
			});
			items.push({ text: '}' });
			pushInOrder(items);
		} else {
			out.push(JSON.stringify(value) ?? 'null');
		}
	}
	return out.join('');
}
