/**
 * An inline (`b64_json`) answer is its job's result, which the job answers again later: its image is
 * stored before the answer, like a hosted one. While files cannot be written no generation is
 * answered, each refused with an error body, and its job ends failed rather than staying running.
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

test('inline with or without a key, or hosted: none is answered, and each job ends failed', async () => {
	for (const [body, headers] of [[{ response_format: 'b64_json', seed: 4 }, {}], [{ response_format: 'url' }, {}], [{ response_format: 'b64_json' }, { 'idempotency-key': 'inline-kept-1' }]] as const) {
		const answer = await generate(body, headers);
		expect(answer.status).toBeGreaterThanOrEqual(500);
		expect((await answer.json()) as unknown).toMatchObject({ error: { code: expect.any(String) } });
	}
	const jobs = (await (await service.request('/v1/generations', { headers: service.auth })).json()) as { data: Array<{ status: string }> };
	expect(jobs.data.map((job) => job.status)).toEqual(['failed', 'failed', 'failed']);
});
