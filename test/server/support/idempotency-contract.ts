/**
 * What every IdempotencyStore must do, written once and run against each implementation (the
 * embedded store here, PostgreSQL elsewhere), directly and through `runIdempotent`.
 */
import { ImageGenError } from '../../../core/errors';
import { rejectedImageGenError } from '../../helpers/image-gen-error';
import { runIdempotent, type RunIdempotentOptions } from '../../../server/src/idempotency/idempotency';
import type { IdempotencyClaim, IdempotencyStore, StoredAnswer } from '../../../server/src/idempotency/idempotency-store';

export interface IdempotencyStoreHarness {
	/**
	 * Opens a store over the harness's backing (data dir, database). Called again, it stands for a
	 * restart (after closing the first) or, when `shared`, for a second replica.
	 */
	open(): Promise<IdempotencyStore>;
	/** Stores opened side by side see each other's claims (replicas of a fleet). */
	shared: boolean;
	cleanup(): Promise<void>;
}

const HOUR = 3_600_000;

/** Bodies that a careless store would alter: non-ASCII, line separators, CRLF, a trailing space. */
const TRICKY_BODY = '{"data":[{"url":"http://127.0.0.1/files/a.png","note":"é ✓ 🎨 \u2028\u2029"}]}\r\n ';

function answer(body = TRICKY_BODY, status = 200): StoredAnswer {
	return { status, contentType: 'application/json; charset=utf-8', body };
}

interface Deferred<T> {
	promise: Promise<T>;
	resolve(value: T): void;
	reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
	let resolve!: (value: T) => void;
	let reject!: (error: unknown) => void;
	const promise = new Promise<T>((yes, no) => {
		resolve = yes;
		reject = no;
	});
	return { promise, resolve, reject };
}

export function describeIdempotencyStoreContract(name: string, factory: () => Promise<IdempotencyStoreHarness>): void {
	describe(`${name}: IdempotencyStore contract`, () => {
		let harness: IdempotencyStoreHarness;
		let store: IdempotencyStore;
		const opened: IdempotencyStore[] = [];
		let sequence = 0;
		/** A key no other test used, so the tests share one backing without seeing each other. */
		let key: string;

		const open = async () => {
			const next = await harness.open();
			opened.push(next);
			return next;
		};
		const claimOf = (overrides: Partial<IdempotencyClaim> = {}, now = new Date()): IdempotencyClaim => ({
			apiKeyId: 'key-a',
			key,
			fingerprint: 'f'.repeat(64),
			expiresAt: new Date(now.getTime() + HOUR),
			leaseUntil: new Date(now.getTime() + 60_000),
			...overrides,
		});
		const run = (overrides: Partial<RunIdempotentOptions> & Pick<RunIdempotentOptions, 'run'>) =>
			runIdempotent({
				store,
				apiKeyId: 'key-a',
				key,
				fingerprint: 'f'.repeat(64),
				retentionSeconds: 3600,
				leaseMs: 60_000,
				waitMs: 5_000,
				pollMs: 10,
				...overrides,
			});

		beforeAll(async () => {
			harness = await factory();
		});
		afterAll(async () => {
			await harness.cleanup();
		});
		beforeEach(async () => {
			key = `test-${process.pid}-${Date.now()}-${sequence++}`;
			store = await open();
		});
		afterEach(async () => {
			for (const each of opened.splice(0)) await each.close?.();
		});

		describe('claim, complete, release', () => {
			it('claims a new key once; a repeat is in progress, another body a mismatch', async () => {
				expect(await store.claim(claimOf())).toEqual({ state: 'claimed' });
				expect(await store.claim(claimOf())).toEqual({ state: 'in_progress' });
				expect(await store.claim(claimOf({ fingerprint: 'e'.repeat(64) }))).toEqual({ state: 'mismatch' });
			});

			it('replays a completed answer byte for byte, and refuses it to another body', async () => {
				await store.claim(claimOf());
				await store.complete('key-a', key, answer(TRICKY_BODY, 201));
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: answer(TRICKY_BODY, 201) });
				expect(await store.claim(claimOf({ fingerprint: 'e'.repeat(64) }))).toEqual({ state: 'mismatch' });
			});

			it('gives back the ids of the files an answer points at with its replay', async () => {
				await store.claim(claimOf());
				await store.complete('key-a', key, { ...answer(), fileIds: ['file-one', 'file-two'] });
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: { ...answer(), fileIds: ['file-one', 'file-two'] } });
			});

			it('keeps an inline answer as its envelope and where each stored file goes, and gives that back with its replay', async () => {
				const envelope = '{"data":[{"b64_json":"","seed":1},{"b64_json":"","seed":2}]}';
				// File ids of this test's own: the tests share one backing.
				const [one, two] = [`${key}-one`, `${key}-two`];
				const inline: StoredAnswer = {
					...answer(envelope),
					fileIds: [one, two],
					inlineFiles: [
						{ fileId: one, at: envelope.indexOf('""') + 1 },
						{ fileId: two, at: envelope.lastIndexOf('""') + 1 },
					],
				};
				await store.claim(claimOf());
				await store.complete('key-a', key, inline);
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: inline });
				const reopened = await open();
				expect(await reopened.claim(claimOf())).toEqual({ state: 'replay', answer: inline });
				expect(await reopened.forgetFile('key-a', two)).toBe(1);
				expect(await reopened.claim(claimOf())).toEqual({ state: 'claimed' });
			});

			it('forgets a released claim, so the repeat (even with another body) runs', async () => {
				await store.claim(claimOf());
				await store.release('key-a', key);
				expect(await store.claim(claimOf({ fingerprint: 'e'.repeat(64) }))).toEqual({ state: 'claimed' });
			});

			it('never forgets a completed answer on release', async () => {
				await store.claim(claimOf());
				await store.complete('key-a', key, answer());
				await store.release('key-a', key);
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: answer() });
			});

			it('keeps the first answer when a claim taken over completes twice', async () => {
				const start = new Date();
				await store.claim(claimOf({ leaseUntil: new Date(start.getTime() + 1000) }, start), start);
				const later = new Date(start.getTime() + 2000);
				expect(await store.claim(claimOf({}, later), later)).toEqual({ state: 'claimed' });
				await store.complete('key-a', key, answer('first'));
				await store.complete('key-a', key, answer('second'));
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: answer('first') });
			});

			it('scopes keys to the API key', async () => {
				await store.claim(claimOf());
				await store.complete('key-a', key, answer('for a'));
				expect(await store.claim(claimOf({ apiKeyId: 'key-b' }))).toEqual({ state: 'claimed' });
				await store.complete('key-b', key, answer('for b'));
				expect(await store.claim(claimOf())).toEqual({ state: 'replay', answer: answer('for a') });
				expect(await store.claim(claimOf({ apiKeyId: 'key-b' }))).toEqual({ state: 'replay', answer: answer('for b') });
			});

			it('lets a key be used afresh once its answer expired', async () => {
				const start = new Date();
				await store.claim(claimOf({ expiresAt: new Date(start.getTime() + 1000) }, start), start);
				await store.complete('key-a', key, answer('old'));
				const later = new Date(start.getTime() + 1001);
				expect(await store.claim(claimOf({ fingerprint: 'e'.repeat(64) }, later), later)).toEqual({ state: 'claimed' });
			});

			it('a claim that takes over an expired answer drops it with the files it pointed at', async () => {
				const start = new Date();
				// File ids of this test's own: the tests share one backing.
				const [old, fresh] = [`${key}-old`, `${key}-new`];
				await store.claim(claimOf({ expiresAt: new Date(start.getTime() + 1000) }, start), start);
				await store.complete('key-a', key, { ...answer('old'), fileIds: [old] });
				const later = new Date(start.getTime() + 1000);
				const other = claimOf({ fingerprint: 'e'.repeat(64) }, later);
				expect(await store.claim(other, later)).toEqual({ state: 'claimed' });
				expect(await store.forgetFile('key-a', old)).toBe(0);
				await store.complete('key-a', key, { ...answer('new'), fileIds: [fresh] });
				expect(await store.claim(other, later)).toEqual({ state: 'replay', answer: { ...answer('new'), fileIds: [fresh] } });
			});

			it('takes over a claim whose lease ran out, for the same body only, by exactly one of many simultaneous claims', async () => {
				const start = new Date();
				await store.claim(claimOf({ leaseUntil: new Date(start.getTime() + 1000) }, start), start);
				const later = new Date(start.getTime() + 1001);
				expect(await store.claim(claimOf({ fingerprint: 'e'.repeat(64) }, later), later)).toEqual({ state: 'mismatch' });
				const stores = harness.shared ? [store, await open(), await open()] : [store];
				const outcomes = await Promise.all(Array.from({ length: 30 }, (_, index) => stores[index % stores.length]!.claim(claimOf({}, later), later)));
				expect(outcomes.filter((outcome) => outcome.state === 'claimed')).toHaveLength(1);
				expect(outcomes.filter((outcome) => outcome.state === 'in_progress')).toHaveLength(29);
				// The late complete of the run that lost its lease may only answer this very request.
				await store.complete('key-a', key, answer());
				expect(await stores.at(-1)!.claim(claimOf({}, later), later)).toEqual({ state: 'replay', answer: answer() });
			});

			it('sweeps expired claims and answers how many', async () => {
				const start = new Date();
				const short = { expiresAt: new Date(start.getTime() + 1000) };
				await store.claim(claimOf(short, start), start);
				await store.complete('key-a', key, answer());
				// A running claim past its expiry and its lease (its process died).
				await store.claim(claimOf({ ...short, leaseUntil: short.expiresAt, apiKeyId: 'key-b' }, start), start);
				await store.claim(claimOf({ apiKeyId: 'key-c' }, start), start);
				await store.complete('key-c', key, answer('kept'));
				const later = new Date(start.getTime() + 1001);
				expect(await store.sweep(later)).toBeGreaterThanOrEqual(2);
				expect(await store.sweep(later)).toBe(0);
				expect(await store.claim(claimOf({ apiKeyId: 'key-c' }))).toEqual({ state: 'replay', answer: answer('kept') });
			});

			it('replays after a restart', async () => {
				await store.claim(claimOf());
				await store.complete('key-a', key, answer());
				await store.close?.();
				opened.splice(opened.indexOf(store), 1);
				const reopened = await open();
				expect(await reopened.claim(claimOf())).toEqual({ state: 'replay', answer: answer() });
			});

			it('grants exactly one of many simultaneous claims', async () => {
				const stores = harness.shared ? [store, await open()] : [store];
				const outcomes = await Promise.all(
					Array.from({ length: 20 }, (_, index) => stores[index % stores.length]!.claim(claimOf())),
				);
				expect(outcomes.filter((outcome) => outcome.state === 'claimed')).toHaveLength(1);
				expect(outcomes.filter((outcome) => outcome.state === 'in_progress')).toHaveLength(19);
			});
		});

		describe('through runIdempotent', () => {
			it('runs once, then replays the same answer flagged as replayed', async () => {
				let runs = 0;
				const first = await run({ run: async () => (runs++, answer()) });
				const second = await run({ run: async () => (runs++, answer('different')) });
				expect(runs).toBe(1);
				expect(first).toEqual({ ...answer(), replayed: false });
				expect(second).toEqual({ ...answer(), replayed: true });
			});

			it('hands the inline files of an answer to the caller, first and on replay', async () => {
				const inline: StoredAnswer = { ...answer('{"b64_json":""}'), fileIds: ['file-one'], inlineFiles: [{ fileId: 'file-one', at: 13 }] };
				// The file ids stay with the store (they keep the files alive); the caller gets the rest.
				const { fileIds, ...sent } = inline;
				expect(fileIds).toEqual(['file-one']);
				expect(await run({ run: async () => inline })).toEqual({ ...sent, replayed: false });
				expect(await run({ run: async () => answer('never') })).toEqual({ ...sent, replayed: true });
			});

			it('runs again when a file the stored answer points at is gone, and remembers the new answer', async () => {
				let runs = 0;
				const made = (fileId: string) => async () => (runs++, { ...answer(fileId), fileIds: [fileId] });
				const alive = new Set(['file-old']);
				const goneFiles = async (ids: readonly string[]) => ids.filter((id) => !alive.has(id));
				expect(await run({ run: made('file-old'), goneFiles })).toEqual({ ...answer('file-old'), replayed: false });
				expect(await run({ run: made('never'), goneFiles })).toEqual({ ...answer('file-old'), replayed: true });
				// The file expired: the repeat runs, and its answer is the one replayed from then on.
				alive.clear();
				alive.add('file-new');
				expect(await run({ run: made('file-new'), goneFiles })).toEqual({ ...answer('file-new'), replayed: false });
				expect(await run({ run: made('never'), goneFiles })).toEqual({ ...answer('file-new'), replayed: true });
				expect(runs).toBe(2);
			});

			it('answers another body under the same key with a 422', async () => {
				await run({ run: async () => answer() });
				let ran = false;
				const error = await rejectedImageGenError(run({ fingerprint: 'e'.repeat(64), run: async () => ((ran = true), answer()) }));
				expect(ran).toBe(false);
				expect(error.status).toBe(422);
				expect(error.code).toBe('idempotency_key_reused');
				expect(error.param).toBe('Idempotency-Key');
				expect(error.toBody().error.type).toBe('invalid_request_error');
			});

			it('does not store a failure: the error passes through and the repeat runs again', async () => {
				const failure = new ImageGenError(502, 'upstream failed');
				await expect(run({ run: async () => Promise.reject(failure) })).rejects.toBe(failure);
				let runs = 0;
				expect(await run({ run: async () => (runs++, answer('second try')) })).toEqual({ ...answer('second try'), replayed: false });
				expect(await run({ run: async () => (runs++, answer('third')) })).toEqual({ ...answer('second try'), replayed: true });
				expect(runs).toBe(1);
			});

			it('lets two concurrent requests run once: the other waits and replays', async () => {
				const second = harness.shared ? await open() : store;
				const gate = deferred<void>();
				let runs = 0;
				const work = async () => {
					runs++;
					await gate.promise;
					return answer();
				};
				const both = Promise.all([run({ run: work }), run({ store: second, run: work })]);
				await new Promise((resolve) => setTimeout(resolve, 100));
				gate.resolve();
				const answers = await both;
				expect(runs).toBe(1);
				expect(answers.map((each) => each.replayed).sort()).toEqual([false, true]);
				expect(answers[0]!.body).toBe(answers[1]!.body);
			});

			it('answers 409 when the first is still running after waitMs, and replays once it is done', async () => {
				const gate = deferred<void>();
				const first = run({
					run: async () => {
						await gate.promise;
						return answer();
					},
				});
				await new Promise((resolve) => setTimeout(resolve, 20));
				const started = Date.now();
				const error = await rejectedImageGenError(run({ waitMs: 150, run: async () => answer('never') }));
				expect(Date.now() - started).toBeGreaterThanOrEqual(140);
				expect(error.status).toBe(409);
				expect(error.code).toBe('idempotency_in_progress');
				expect(error.retryAfterSeconds).toBeGreaterThan(0);
				gate.resolve();
				await first;
				expect(await run({ run: async () => answer('never') })).toEqual({ ...answer(), replayed: true });
			});

			it('lets a waiting repeat run itself when the first fails', async () => {
				const gate = deferred<void>();
				const first = run({
					run: async () => {
						await gate.promise;
						throw new ImageGenError(504, 'timed out');
					},
				});
				await new Promise((resolve) => setTimeout(resolve, 20));
				const repeat = run({ run: async () => answer('from the repeat') });
				gate.resolve();
				await expect(first).rejects.toThrow('timed out');
				expect(await repeat).toEqual({ ...answer('from the repeat'), replayed: false });
			});

			it('stops waiting when the signal aborts', async () => {
				const gate = deferred<void>();
				const first = run({ run: async () => (await gate.promise, answer()) });
				await new Promise((resolve) => setTimeout(resolve, 20));
				const controller = new AbortController();
				const waiting = run({ signal: controller.signal, run: async () => answer('never') });
				setTimeout(() => controller.abort(), 50);
				await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
				gate.resolve();
				await first;
			});
		});
	});
}
