/**
 * `Idempotency-Key` over real HTTP on one server: generations go to an upstream stand-in that
 * counts provider calls, so a replay that generated (or charged) again would show.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';
import { startCountingUpstream, type CountingUpstream } from '../support/counting-upstream';
import Database from 'better-sqlite3';
import sharp from 'sharp';
import { call, expectApiError, type ApiAnswer } from '../support/http';
import { makeImage } from '../support/media';

const OWNER = 'owner-key-0123456789';
const OTHER = 'other-key-0123456789';
let upstream: CountingUpstream;
let server: RunningServer;

beforeAll(async () => {
	upstream = await startCountingUpstream();
	const { args, env } = upstream.serverOptions();
	server = await startServer({ apiKey: `${OWNER},${OTHER}`, args, env });
});
afterAll(async () => {
	await server?.stop({ removeData: true });
	await upstream?.close();
});
beforeEach(() => {
	upstream.delayMs = 0;
});

let counter = 0;
const newKey = () => `key-${Date.now()}-${++counter}`;
const as = (key: string) => ({ ...server, apiKey: key });
const generate = (key: string | undefined, body: Record<string, unknown> = { model: 'p-image', prompt: 'a harbour', response_format: 'url' }, apiKey = OWNER) =>
	rawPost(as(apiKey), '/v1/images/generations', JSON.stringify(body), key);

/** The body as text, so byte-for-byte equality can be checked. */
async function rawPost(target: RunningServer, path: string, body: string, key: string | undefined): Promise<ApiAnswer<string>> {
	const headers: Record<string, string> = { 'content-type': 'application/json' };
	if (key !== undefined) headers['idempotency-key'] = key;
	const response = await fetch(`${target.origin}${path}`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${target.apiKey}` }, body });
	return { status: response.status, headers: response.headers, body: await response.text() };
}

async function usageImages(apiKey: string): Promise<number> {
	return (await call(as(apiKey), '/v1/usage')).body.total.images;
}

describe('generations', () => {
	test('same key and body: replayed byte for byte, generated and charged once', async () => {
		const key = newKey();
		const [callsBefore, imagesBefore] = [upstream.calls, await usageImages(OWNER)];
		const first = await generate(key);
		const second = await generate(key);
		expect(first.status).toBe(200);
		expect(second.status).toBe(200);
		expect(second.body).toBe(first.body);
		expect(first.headers.get('idempotent-replayed')).toBeNull();
		expect(second.headers.get('idempotent-replayed')).toBe('true');
		expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'));
		expect(upstream.calls - callsBefore).toBe(1);
		expect((await usageImages(OWNER)) - imagesBefore).toBe(1);
	});

	test('inline (b64_json): replayed byte for byte from the stored image; the record keeps the answer without the image', async () => {
		const key = newKey();
		const body = { model: 'p-image', prompt: 'a harbour, inline', response_format: 'b64_json', seed: 3 };
		const before = upstream.calls;
		const first = await generate(key, body);
		const second = await generate(key, body);
		expect(first.status).toBe(200);
		expect(second.headers.get('idempotent-replayed')).toBe('true');
		expect(second.body).toBe(first.body);
		expect(upstream.calls - before).toBe(1);
		for (const answer of [first, second]) expect(Number(answer.headers.get('content-length'))).toBe(Buffer.byteLength(answer.body));
		const image: string = JSON.parse(first.body).data[0].b64_json;
		expect((await sharp(Buffer.from(image, 'base64')).metadata()).format).toBe('png');

		const database = new Database(join(server.dataDir, 'imagegen.db'), { readonly: true });
		try {
			const row = database.prepare('SELECT CAST(body AS TEXT) AS body FROM idempotency_keys WHERE key = ?').get(key) as { body: string };
			expect(row.body).toBe(first.body.replace(image, ''));
		} finally {
			database.close();
		}
	});

	test('inline without a key: nobody can ask for the image again, so it is not stored, and its job succeeded with result null', async () => {
		const pngs = () => readdirSync(join(server.dataDir, 'files')).filter((name) => name.endsWith('.png')).sort();
		const files = pngs();
		const answer = await generate(undefined, { model: 'p-image', prompt: 'a harbour, once', response_format: 'b64_json' });
		expect(answer.status).toBe(200);
		expect(JSON.parse(answer.body).data[0].b64_json.length).toBeGreaterThan(100);
		expect(pngs()).toEqual(files);
		const jobs = await call(as(OWNER), '/v1/generations?limit=1');
		expect(jobs.body.data[0]).toMatchObject({ status: 'succeeded', result: null });
	});

	test('the same body with keys reordered and spaced differently still replays', async () => {
		const key = newKey();
		const first = await rawPost(as(OWNER), '/v1/images/generations', '{"model":"p-image","prompt":"x","seed":5}', key);
		const second = await rawPost(as(OWNER), '/v1/images/generations', '{ "seed": 5, "prompt": "x", "model": "p-image" }', key);
		expect(second.headers.get('idempotent-replayed')).toBe('true');
		expect(second.body).toBe(first.body);
	});

	test('without a key every request generates', async () => {
		const before = upstream.calls;
		await generate(undefined);
		await generate(undefined);
		expect(upstream.calls - before).toBe(2);
	});

	test('same key, another body → 422 idempotency_key_reused, nothing generated', async () => {
		const key = newKey();
		await generate(key);
		const before = upstream.calls;
		const reused = await generate(key, { model: 'p-image', prompt: 'something else' });
		expect(reused.status).toBe(422);
		expect(JSON.parse(reused.body).error).toMatchObject({ param: 'Idempotency-Key', code: 'idempotency_key_reused' });
		expect(upstream.calls).toBe(before);
	});

	test('keys are scoped to the API key: another key with the same Idempotency-Key gets its own generation', async () => {
		const key = newKey();
		const before = upstream.calls;
		const mine = await generate(key);
		const theirs = await generate(key, undefined, OTHER);
		expect(theirs.status).toBe(200);
		expect(theirs.headers.get('idempotent-replayed')).toBeNull();
		expect(theirs.body).not.toBe(mine.body);
		expect(upstream.calls - before).toBe(2);
	});

	test('a failed first request is not stored: its repeat runs again', async () => {
		const key = newKey();
		upstream.failNext(1);
		const failed = await generate(key);
		expect(failed.status).toBeGreaterThanOrEqual(400);
		const before = upstream.calls;
		const repeat = await generate(key);
		expect(repeat.status).toBe(200);
		expect(repeat.headers.get('idempotent-replayed')).toBeNull();
		expect(upstream.calls - before).toBe(1);
	});

	test('concurrent repeats wait for the first: one generation, the same answer for all', async () => {
		upstream.delayMs = 600;
		const key = newKey();
		const before = upstream.calls;
		const answers = await Promise.all([generate(key), generate(key), generate(key)]);
		expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
		expect(new Set(answers.map((answer) => answer.body)).size).toBe(1);
		expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(2);
		expect(upstream.calls - before).toBe(1);
	});

	test.each([
		['empty', ''],
		['256 characters', 'k'.repeat(256)],
		['non-ASCII', 'clé-1'],
		['with a space', 'two words'],
	])('a bad key (%s) → 400 naming Idempotency-Key, nothing generated', async (_name, key) => {
		const before = upstream.calls;
		const answer = await generate(key);
		expect(answer.status).toBe(400);
		expect(JSON.parse(answer.body).error.param).toBe('Idempotency-Key');
		expect(upstream.calls).toBe(before);
	});

	test('a key of 255 visible characters is fine', async () => {
		expect((await generate('k'.repeat(254) + '~')).status).toBe(200);
	});
});

describe('a repeat that waited too long gets a 409', () => {
	let slow: RunningServer;
	beforeAll(async () => {
		const { args, env } = upstream.serverOptions();
		// A generation limit of 4 s lets a repeat wait at most 2 s; the margins hold on a loaded machine.
		slow = await startServer({ apiKey: OWNER, args: [...args, '--generation-timeout-seconds', '4'], env });
	});
	afterAll(() => slow?.stop({ removeData: true }));

	test('409 idempotency_in_progress with Retry-After; afterwards the repeat replays', async () => {
		upstream.delayMs = 2_800;
		const key = newKey();
		const before = upstream.calls;
		const send = () => rawPost(slow, '/v1/images/generations', '{"model":"p-image","prompt":"slow"}', key);
		const pending = send();
		await new Promise((resolve) => setTimeout(resolve, 150));
		// Whichever claims the key first generates; the other gives up waiting after 2 s.
		const answers = await Promise.all([pending, send()]);
		expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
		const done = answers.find((answer) => answer.status === 200)!;
		const early = answers.find((answer) => answer.status === 409)!;
		expect(JSON.parse(early.body).error).toMatchObject({ param: 'Idempotency-Key', code: 'idempotency_in_progress' });
		expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
		const later = await send();
		expect(later.headers.get('idempotent-replayed')).toBe('true');
		expect(later.body).toBe(done.body);
		expect(upstream.calls - before).toBe(1);
	});

	test('a repeat whose client leaves while waiting ends quietly; the first run still completes and is replayed', async () => {
		upstream.delayMs = 800;
		const key = newKey();
		const before = upstream.calls;
		const send = (signal?: AbortSignal) =>
			fetch(`${slow.baseUrl}/images/generations`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', authorization: `Bearer ${OWNER}`, 'idempotency-key': key },
				body: '{"model":"p-image","prompt":"left"}',
				signal,
			});
		const first = send();
		await new Promise((resolve) => setTimeout(resolve, 150));
		const leaving = new AbortController();
		const repeat = send(leaving.signal).catch((error: unknown) => error);
		await new Promise((resolve) => setTimeout(resolve, 200));
		leaving.abort();
		expect((await repeat as Error).name).toBe('AbortError');
		expect((await first).status).toBe(200);
		expect((await send()).headers.get('idempotent-replayed')).toBe('true');
		expect(upstream.calls - before).toBe(1);
		expect(slow.output()).not.toMatch(/request failed/);
	});
});

describe('uploads', () => {
	const countFiles = () => readdirSync(join(server.dataDir, 'files')).filter((name) => name.endsWith('.png')).length;

	test('JSON: a repeat replays the same URL and stores nothing more', async () => {
		const key = newKey();
		const body = JSON.stringify({ file: (await makeImage('png', 16, 16)).toString('base64'), expires_in: 300 });
		const first = await rawPost(as(OWNER), '/v1/uploads', body, key);
		const files = countFiles();
		const second = await rawPost(as(OWNER), '/v1/uploads', body, key);
		expect(first.status).toBe(200);
		expect(second.body).toBe(first.body);
		expect(second.headers.get('idempotent-replayed')).toBe('true');
		expect(countFiles()).toBe(files);
		const reused = await rawPost(as(OWNER), '/v1/uploads', JSON.stringify({ file: (await makeImage('png', 17, 16)).toString('base64') }), key);
		expect(reused.status).toBe(422);
	});

	test('multipart: a repeat with a new boundary replays; other bytes or fields → 422; nothing extra stays stored', async () => {
		const key = newKey();
		const png = await makeImage('png', 20, 16);
		const headers = { 'idempotency-key': key };
		const once = await callUpload(png, { expires_in: '300' }, headers);
		const files = countFiles();
		const again = await callUpload(png, { expires_in: '300' }, headers);
		expect(again.status).toBe(200);
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.body).toBe(once.body);
		expect(countFiles()).toBe(files);
		const otherBytes = await callUpload(await makeImage('png', 21, 16), { expires_in: '300' }, headers);
		expect(otherBytes.status).toBe(422);
		expect(JSON.parse(otherBytes.body).error.code).toBe('idempotency_key_reused');
		const otherFields = await callUpload(png, { expires_in: '400' }, headers);
		expect(otherFields.status).toBe(422);
		expect(countFiles()).toBe(files);
	});

	test('a multipart upload with a bad key is refused before anything is stored', async () => {
		const files = countFiles();
		const answer = await callUpload(await makeImage('png', 16, 16), {}, { 'idempotency-key': '' });
		expect(answer.status).toBe(400);
		expect(JSON.parse(answer.body).error.param).toBe('Idempotency-Key');
		expect(countFiles()).toBe(files);
	});

	async function callUpload(bytes: Buffer, fields: Record<string, string>, headers: Record<string, string>): Promise<ApiAnswer<string>> {
		const form = new FormData();
		form.append('file', new Blob([bytes]), 'a.png');
		for (const [name, value] of Object.entries(fields)) form.append(name, value);
		const response = await fetch(`${server.origin}/v1/uploads`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${OWNER}` }, body: form });
		return { status: response.status, headers: response.headers, body: await response.text() };
	}

	test('a key used for an upload and then for a generation is a different request → 422', async () => {
		const key = newKey();
		expect((await rawPost(as(OWNER), '/v1/uploads', JSON.stringify({ file: (await makeImage('png', 9, 9)).toString('base64') }), key)).status).toBe(200);
		const generation = await generate(key);
		expectApiError({ ...generation, body: JSON.parse(generation.body) }, 422, 'Idempotency-Key');
	});
});
