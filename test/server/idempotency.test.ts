import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageGenError } from '../../core/errors';
import {
	FingerprintHasher,
	canonicalJson,
	fingerprint,
	fingerprintJson,
	parseIdempotencyKey,
	runIdempotent,
} from '../../server/src/idempotency/idempotency';
import { IDEMPOTENCY_BODIES, IDEMPOTENCY_JOURNAL, MemoryIdempotencyStore } from '../../server/src/idempotency/memory-idempotency-store';
import { describeIdempotencyStoreContract } from './support/idempotency-contract';

describeIdempotencyStoreContract('MemoryIdempotencyStore', async () => {
	const dataDir = await mkdtemp(join(tmpdir(), 'idempotency-contract-'));
	return {
		open: () => MemoryIdempotencyStore.open(dataDir),
		shared: false,
		cleanup: () => rm(dataDir, { recursive: true, force: true }),
	};
});

describe('MemoryIdempotencyStore journal', () => {
	let dataDir: string;
	const journal = () => join(dataDir, IDEMPOTENCY_JOURNAL);
	const lines = async () => (await readFile(journal(), 'utf8')).split('\n').filter(Boolean);
	const answer = (body: string) => ({ status: 200, contentType: 'application/json; charset=utf-8', body });
	const claim = (key: string, now: Date, lifetimeMs = 3_600_000, fingerprintText = 'abc') => ({
		apiKeyId: 'owner',
		key,
		fingerprint: fingerprintText,
		expiresAt: new Date(now.getTime() + lifetimeMs),
		leaseUntil: new Date(now.getTime() + 60_000),
	});

	beforeEach(async () => {
		dataDir = await mkdtemp(join(tmpdir(), 'idempotency-journal-'));
	});
	afterEach(async () => {
		await rm(dataDir, { recursive: true, force: true });
	});

	it('writes only completed answers, readable by the owner alone', async () => {
		const store = await MemoryIdempotencyStore.open(dataDir);
		const now = new Date();
		await store.claim(claim('done', now), now);
		await store.claim(claim('running', now), now);
		await store.complete('owner', 'done', answer('{"ok":true}'));
		await store.close();
		const written = await lines();
		expect(written).toHaveLength(1);
		const line = JSON.parse(written[0]!);
		expect(line).toMatchObject({ apiKeyId: 'owner', key: 'done', fingerprint: 'abc', status: 200, contentType: answer('').contentType, size: 11 });
		expect((await stat(journal())).mode & 0o777).toBe(0o600);
		// The body is a file of its own, not part of the journal (nor of the index in memory).
		expect(written[0]).not.toContain('"ok"');
		expect(await readFile(join(dataDir, IDEMPOTENCY_BODIES, line.ref), 'utf8')).toBe('{"ok":true}');
		expect((await stat(join(dataDir, IDEMPOTENCY_BODIES, line.ref))).mode & 0o777).toBe(0o600);
	});

	it('keeps bodies on disk by reference: a journal of many large answers stays small and replays byte for byte', async () => {
		const now = new Date();
		const store = await MemoryIdempotencyStore.open(dataDir, now);
		const big = (index: number) => `{"data":[{"b64_json":"${Buffer.alloc(256 * 1024, index).toString('base64')}"}],"note":"é\u2028 ✓"}\r\n`;
		for (let index = 0; index < 20; index++) {
			await store.claim(claim(`big-${index}`, now), now);
			await store.complete('owner', `big-${index}`, answer(big(index)));
		}
		await store.close();
		expect((await stat(journal())).size).toBeLessThan(20 * 1024);
		const reopened = await MemoryIdempotencyStore.open(dataDir, now);
		for (const index of [0, 7, 19]) expect(await reopened.claim(claim(`big-${index}`, now), now)).toEqual({ state: 'replay', answer: answer(big(index)) });
	});

	it('moves the bodies of a journal written by an older version out of it, replaying them byte for byte', async () => {
		const body = '{"data":[{"url":"http://127.0.0.1/files/x.png"}]}\n é';
		const legacy = { apiKeyId: 'owner', key: 'old', fingerprint: 'abc', expiresAt: new Date(Date.now() + 60_000).toISOString(), answer: answer(body) };
		await writeFile(journal(), `${JSON.stringify(legacy)}\n`);
		const store = await MemoryIdempotencyStore.open(dataDir);
		expect(await store.claim(claim('old', new Date()))).toEqual({ state: 'replay', answer: answer(body) });
		expect((await lines())[0]).not.toContain('files/x.png');
	});

	it('forgets the answers that point at a deleted file, for good, and only that key\'s', async () => {
		const now = new Date();
		const store = await MemoryIdempotencyStore.open(dataDir, now);
		const withFiles = (body: string, fileIds: string[]) => ({ ...answer(body), fileIds });
		for (const [apiKeyId, key, fileIds] of [['owner', 'a', ['file-1']], ['owner', 'b', ['file-2', 'file-1']], ['owner', 'c', ['file-3']], ['other', 'a', ['file-1']]] as const) {
			await store.claim({ ...claim(key, now), apiKeyId }, now);
			await store.complete(apiKeyId, key, withFiles(key, [...fileIds]));
		}
		expect(await store.forgetFile('owner', 'file-1')).toBe(2);
		expect(await store.forgetFile('owner', 'file-1')).toBe(0);
		await store.close();
		const reopened = await MemoryIdempotencyStore.open(dataDir, now);
		expect(await reopened.claim(claim('a', now), now)).toEqual({ state: 'claimed' });
		expect(await reopened.claim(claim('b', now), now)).toEqual({ state: 'claimed' });
		expect((await reopened.claim(claim('c', now), now)).state).toBe('replay');
		expect((await reopened.claim({ ...claim('a', now), apiKeyId: 'other' }, now)).state).toBe('replay');
	});

	it('runs a repeat again when its body was lost in a crash, and removes bodies nothing refers to', async () => {
		const now = new Date();
		const store = await MemoryIdempotencyStore.open(dataDir, now);
		await store.claim(claim('lost', now), now);
		await store.complete('owner', 'lost', answer('{"whole":"answer"}'));
		await store.close();
		const ref = JSON.parse((await lines())[0]!).ref as string;
		await writeFile(join(dataDir, IDEMPOTENCY_BODIES, ref), '');
		await writeFile(join(dataDir, IDEMPOTENCY_BODIES, 'f'.repeat(32)), 'orphan');
		const reopened = await MemoryIdempotencyStore.open(dataDir, now);
		expect(await readdir(join(dataDir, IDEMPOTENCY_BODIES))).toEqual([ref]);
		expect(await reopened.claim(claim('lost', now), now)).toEqual({ state: 'claimed' });
	});

	it('forgets running claims on restart: their process died, so a repeat runs again', async () => {
		const now = new Date();
		const first = await MemoryIdempotencyStore.open(dataDir);
		await first.claim(claim('running', now), now);
		await first.close();
		const second = await MemoryIdempotencyStore.open(dataDir);
		expect(await second.claim(claim('running', now), now)).toEqual({ state: 'claimed' });
	});

	it('drops expired answers and torn lines when opened', async () => {
		const start = new Date();
		const first = await MemoryIdempotencyStore.open(dataDir, start);
		for (const key of ['short-1', 'short-2', 'short-3']) {
			await first.claim(claim(key, start, 1000), start);
			await first.complete('owner', key, answer(key));
		}
		await first.claim(claim('long', start), start);
		await first.complete('owner', 'long', answer('long'));
		await first.close();
		await appendFile(journal(), '{"apiKeyId":"owner","key":"torn","fingerpr');
		expect(await lines()).toHaveLength(5);

		const later = new Date(start.getTime() + 2000);
		const second = await MemoryIdempotencyStore.open(dataDir, later);
		const kept = await lines();
		expect(kept).toHaveLength(1);
		expect(JSON.parse(kept[0]!).key).toBe('long');
		expect(await second.claim(claim('long', later), later)).toEqual({ state: 'replay', answer: answer('long') });
		expect(await second.claim(claim('short-1', later), later)).toEqual({ state: 'claimed' });
	});

	it('leaves a journal without dead lines as it is', async () => {
		const now = new Date();
		const first = await MemoryIdempotencyStore.open(dataDir, now);
		await first.claim(claim('one', now), now);
		await first.complete('owner', 'one', answer('one'));
		await first.close();
		const before = await stat(journal());
		await MemoryIdempotencyStore.open(dataDir, now);
		expect((await stat(journal())).ino).toBe(before.ino);
	});

	it('compacts the journal in sweep once most of it is dead', async () => {
		const start = new Date();
		const store = await MemoryIdempotencyStore.open(dataDir, start);
		for (let index = 0; index < 40; index++) {
			await store.claim(claim(`short-${index}`, start, 1000), start);
			await store.complete('owner', `short-${index}`, answer(String(index)));
		}
		await store.claim(claim('long', start), start);
		await store.complete('owner', 'long', answer('long'));
		expect(await lines()).toHaveLength(41);
		expect(await store.sweep(new Date(start.getTime() + 2000))).toBe(40);
		expect(await lines()).toHaveLength(1);
		// Appends after the rewrite land in the new file.
		await store.claim(claim('after', start), start);
		await store.complete('owner', 'after', answer('after'));
		expect((await lines()).map((line) => JSON.parse(line).key)).toEqual(['long', 'after']);
	});

	it('keeps the first of two answers written for one key across a restart', async () => {
		const line = (body: string) =>
			`${JSON.stringify({ apiKeyId: 'owner', key: 'twice', fingerprint: 'abc', expiresAt: new Date(Date.now() + 60_000).toISOString(), answer: answer(body) })}\n`;
		await writeFile(journal(), line('first') + line('second'));
		const store = await MemoryIdempotencyStore.open(dataDir);
		expect(await store.claim(claim('twice', new Date()))).toEqual({ state: 'replay', answer: answer('first') });
	});

	it('fails the completion when the journal cannot be written, and the run still answers', async () => {
		const store = await MemoryIdempotencyStore.open(dataDir);
		await rm(dataDir, { recursive: true, force: true });
		const storeErrors: unknown[] = [];
		const result = await runIdempotent({
			store,
			apiKeyId: 'owner',
			key: 'unwritable',
			fingerprint: 'abc',
			retentionSeconds: 60,
			leaseMs: 60_000,
			waitMs: 1000,
			run: async () => answer('done'),
			onStoreError: (error) => storeErrors.push(error),
		});
		expect(result).toEqual({ ...answer('done'), replayed: false });
		expect(storeErrors).toHaveLength(1);
		// Not stored, and not left running: a repeat runs again at once.
		expect(await store.claim(claim('unwritable', new Date()))).toEqual({ state: 'claimed' });
	});
});

describe('parseIdempotencyKey', () => {
	it('answers the key, or undefined when there is none', () => {
		expect(parseIdempotencyKey(undefined)).toBeUndefined();
		expect(parseIdempotencyKey('a')).toBe('a');
		expect(parseIdempotencyKey('exec-12:node-ab_cd/item~0!')).toBe('exec-12:node-ab_cd/item~0!');
		expect(parseIdempotencyKey('k'.repeat(255))).toHaveLength(255);
	});

	it.each([
		['an empty key', '', 'empty_value'],
		['256 characters', 'k'.repeat(256), 'too_long'],
		['a space', 'two words', 'invalid_value'],
		['a tab', 'tab\there', 'invalid_value'],
		['non-ASCII', 'café', 'invalid_value'],
		['a line break', 'new\nline', 'invalid_value'],
		['DEL', '\u007f', 'invalid_value'],
	])('rejects %s with a 400 naming Idempotency-Key', (_label, header, code) => {
		let error: unknown;
		try {
			parseIdempotencyKey(header);
		} catch (caught) {
			error = caught;
		}
		expect(error).toBeInstanceOf(ImageGenError);
		expect(error).toMatchObject({ status: 400, param: 'Idempotency-Key', code });
	});

	it('rejects a header sent twice', () => {
		expect(() => parseIdempotencyKey(['a', 'b'])).toThrow(expect.objectContaining({ param: 'Idempotency-Key', code: 'duplicate_field' }));
	});
});

describe('fingerprints', () => {
	it('are SHA-256 hex and depend on method, path and body', () => {
		const base = fingerprint('POST', '/v1/uploads', '{"a":1}');
		expect(base).toMatch(/^[0-9a-f]{64}$/);
		expect(fingerprint('post', '/v1/uploads', Buffer.from('{"a":1}'))).toBe(base);
		expect(fingerprint('PUT', '/v1/uploads', '{"a":1}')).not.toBe(base);
		expect(fingerprint('POST', '/v1/images/generations', '{"a":1}')).not.toBe(base);
		expect(fingerprint('POST', '/v1/uploads', '{"a":2}')).not.toBe(base);
		// Where the path ends and the body starts is part of the hash.
		expect(fingerprint('POST', '/v1/x', 'ab')).not.toBe(fingerprint('POST', '/v1/xa', 'b'));
	});

	it('match JSON bodies that differ only in key order and spacing', () => {
		const body = { model: 'p-image', prompt: 'a cat', options: { seed: 1, size: [1, 2] } };
		const reordered = JSON.parse('{ "options": {"size":[1,2], "seed":1}, "prompt":"a cat", "model":"p-image" }');
		expect(fingerprintJson('POST', '/v1/images/generations', reordered)).toBe(fingerprintJson('POST', '/v1/images/generations', body));
		expect(fingerprintJson('POST', '/v1/images/generations', { ...body, prompt: 'a dog' })).not.toBe(
			fingerprintJson('POST', '/v1/images/generations', body),
		);
		expect(fingerprintJson('POST', '/p', { options: { size: [2, 1] } })).not.toBe(fingerprintJson('POST', '/p', { options: { size: [1, 2] } }));
		expect(canonicalJson({ b: [1, { d: null, c: 'x' }], a: undefined })).toBe('{"b":[1,{"c":"x","d":null}]}');
	});

	it('hash multipart parts the same however the bytes are chunked', () => {
		const bytes = Buffer.from(Array.from({ length: 100_000 }, (_, index) => index % 251));
		const whole = new FingerprintHasher('POST', '/v1/uploads').field('max_side', '1440').file('file').update(bytes).digest();
		const chunked = new FingerprintHasher('POST', '/v1/uploads').field('max_side', '1440').file('file');
		for (let offset = 0; offset < bytes.length; offset += 7_777) chunked.update(bytes.subarray(offset, offset + 7_777));
		expect(chunked.digest()).toBe(whole);

	});

	it('tell multipart requests apart by field values, names, order and file bytes', () => {
		const digest = (build: (hasher: FingerprintHasher) => FingerprintHasher) => build(new FingerprintHasher('POST', '/v1/uploads')).digest();
		const file = Buffer.from('image bytes');
		const base = digest((h) => h.field('max_side', '1440').file('file').update(file));
		const variants = [
			digest((h) => h.field('max_side', '1080').file('file').update(file)),
			digest((h) => h.field('max_bytes', '1440').file('file').update(file)),
			digest((h) => h.file('file').update(file).field('max_side', '1440')),
			digest((h) => h.field('max_side', '1440').file('file').update(Buffer.from('image bytez'))),
			digest((h) => h.field('max_side', '1440').field('file', 'image bytes')),
			digest((h) => h.field('max_side', '14').field('40', '').file('file').update(file)),
		];
		expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
		expect(() => new FingerprintHasher('POST', '/').update(file)).toThrow(/file\(\) part first/);
	});
});
