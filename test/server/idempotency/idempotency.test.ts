import {
	FingerprintHasher,
	canonicalJson,
	fingerprint,
	fingerprintJson,
	parseIdempotencyKey,
} from '../../../server/src/idempotency/idempotency';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlIdempotencyStore } from '../../../server/src/idempotency/sql-idempotency-store';
import { thrownImageGenError } from '../../helpers/image-gen-error';
import { describeIdempotencyStoreContract } from '../support/idempotency-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

// Every open() is a connection of its own on the data dir's database: a restart, or another process.
describeIdempotencyStoreContract('SqlIdempotencyStore on SQLite', async () => ({
	...(await connectionPerOpen('idempotency-contract-', (database) => new SqlIdempotencyStore(new SqliteAdapter(database)))),
	shared: true,
}));

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
		expect(thrownImageGenError(() => parseIdempotencyKey(header))).toMatchObject({ status: 400, param: 'Idempotency-Key', code });
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
