/**
 * An inline (`b64_json`) answer that nobody will replay is sent from the marked image in memory,
 * in pieces: it needs no storage at all, so it is answered while files cannot be written, where a
 * hosted answer, or an inline one with an `Idempotency-Key` (replayed from its stored image), fails.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { buildTestApp, type InProcessApp } from '../support/app';

let service: InProcessApp;

beforeAll(async () => {
	service = await buildTestApp();
	// The files folder replaced by a plain file: every write of a hosted file fails (ENOTDIR).
	const files = join(service.dataDir, 'files');
	rmSync(files, { recursive: true, force: true });
	writeFileSync(files, 'not a folder');
}, 60_000);
afterAll(async () => {
	await service?.close();
});

const generate = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
	service.request('/v1/images/generations', {
		method: 'POST',
		headers: { ...service.auth, 'content-type': 'application/json', ...headers },
		body: JSON.stringify({ model: 'p-image', prompt: 'a harbour', ...body }),
	});

test('inline without a key: answered from memory, the exact base64 of a whole image, Content-Length right', async () => {
	const answer = await generate({ response_format: 'b64_json', seed: 4 });
	expect(answer.status).toBe(200);
	const text = await answer.text();
	expect(Number(answer.headers.get('content-length'))).toBe(Buffer.byteLength(text));
	const image = Buffer.from(JSON.parse(text).data[0].b64_json as string, 'base64');
	expect((await sharp(image).metadata()).format).toBe('png');
});

test('hosted, or inline with a key, need the file written first: neither is answered', async () => {
	expect((await generate({ response_format: 'url' })).status).not.toBe(200);
	expect((await generate({ response_format: 'b64_json' }, { 'idempotency-key': 'inline-kept-1' })).status).not.toBe(200);
});
