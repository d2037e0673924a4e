/**
 * While files cannot be written, no generation whose image must be stored is answered: a hosted
 * one, and an inline one that is kept for its job (an Idempotency-Key); each is refused with an
 * error body, and its job ends failed rather than staying running. An inline answer nobody can ask
 * for again is never written, so it is answered, and its job succeeded with result null.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

test('hosted, or inline with a key: neither is answered and each job ends failed; inline without a key is answered', async () => {
	for (const [body, headers] of [[{ response_format: 'url' }, {}], [{ response_format: 'b64_json' }, { 'idempotency-key': 'inline-kept-1' }]] as const) {
		const answer = await generate(body, headers);
		expect(answer.status).toBeGreaterThanOrEqual(500);
		expect((await answer.json()) as unknown).toMatchObject({ error: { code: expect.any(String) } });
	}
	const inline = await generate({ response_format: 'b64_json', seed: 4 });
	expect(inline.status).toBe(200);
	const jobs = (await (await service.request('/v1/generations', { headers: service.auth })).json()) as { data: Array<{ status: string; result: unknown }> };
	expect(jobs.data.map((job) => [job.status, job.result])).toEqual([
		['succeeded', null],
		['failed', null],
		['failed', null],
	]);
});
