/**
 * A job's row keeps its request without the inline inputs it was sent (base64, data URIs): an edit
 * with three megabyte-sized inline images, or a video with an inline first frame, leaves a row of a
 * few hundred bytes, while URLs are kept as sent. Through the whole service in process, sandbox
 * hosts, read back from the data dir's database.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, eventually } from '../support/http';
import { noisyPng } from '../support/media';

jest.setTimeout(60_000);

let server: InProcessServer | undefined;
let dataDir: string;

beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-job-inputs-'));
});
afterEach(async () => {
	await server?.stop({ removeData: true });
	server = undefined;
});

function storedRequest(id: string): { request: Record<string, unknown>; characters: number } {
	const database = openSqliteDatabase(dataDir);
	try {
		const row = database.prepare('SELECT request FROM generation_jobs WHERE id = ?').get(id) as { request: string };
		return { request: JSON.parse(row.request) as Record<string, unknown>, characters: row.request.length };
	} finally {
		database.close();
	}
}

async function create(path: string, body: object): Promise<string> {
	const answer = await call<{ id: string; status: string }>(server!, path, {
		method: 'POST',
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify(body),
	});
	expect([200, 202]).toContain(answer.status);
	return answer.body.id;
}

it('an edit with three inline images of a megabyte each keeps none of them in its row; a URL input is kept', async () => {
	server = await startInProcessServer({ dataDir, args: ['--log-level', 'silent'] });
	const inline = (await noisyPng(600, 600)).toString('base64');
	expect(inline.length).toBeGreaterThan(1_000_000);
	const url = `${server.origin}/v1/files/not-fetched.png`;
	const id = await create('/v1/images/generations', {
		model: 'p-image-edit',
		prompt: 'the three as one collage',
		images: [`data:image/png;base64,${inline}`, inline, inline],
		response_format: 'url',
	});
	expect(await eventually(async () => (await call<{ status: string }>(server!, `/v1/generations/${id}`)).body.status === 'succeeded', 30_000)).toBe(true);
	const { request, characters } = storedRequest(id);
	expect(characters).toBeLessThan(1_000);
	expect(request.images).toEqual([expect.stringMatching(/^omitted:/), expect.stringMatching(/^omitted:/), expect.stringMatching(/^omitted:/)]);
	// match_input_image was settled to the ratio the host was asked for before the row was written: a resume needs no input.
	expect(request.aspect_ratio).toBe('1:1');
	expect(request.prompt).toBe('the three as one collage');
	const { storedRequest: keep } = await import('../../../server/src/jobs/stored-request');
	expect(keep({ images: [url, inline] })).toEqual({ images: [url, expect.stringMatching(/^omitted:inline input of \d+ characters$/)] });
});

it('a video with an inline first frame keeps none of it in its row', async () => {
	server = await startInProcessServer({ dataDir, args: ['--log-level', 'silent'] });
	const frame = (await noisyPng(640, 360)).toString('base64');
	const id = await create('/v1/videos', { model: 'p-video', prompt: 'the frame comes alive', seconds: 1, input_reference: `data:image/png;base64,${frame}` });
	const { request, characters } = storedRequest(id);
	expect(characters).toBeLessThan(1_000);
	expect(request.image).toMatch(/^omitted:/);
	expect(await eventually(async () => ['completed', 'failed'].includes((await call<{ status: string }>(server!, `/v1/videos/${id}`)).body.status), 20_000)).toBe(true);
	expect((await call<{ status: string }>(server!, `/v1/videos/${id}`)).body.status).toBe('completed');
});
