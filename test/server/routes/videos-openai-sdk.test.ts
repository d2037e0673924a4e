/**
 * The official `openai` SDK's `videos` resource, unchanged, against the service in process over
 * loopback on the sandbox host: create (it sends multipart), retrieve until completed, download the
 * MP4 and its thumbnail, list, cancel and delete, and a refused field as the SDK's BadRequestError.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { TRAINED_ALGORITHMIC_MEDIA } from '../../../core/api';
import { probeVideo } from '../../helpers/ffprobe';
import { actionsOf, ownTrustAnchor, readC2paManifest } from '../support/c2pa-reader';
import { startInProcessServer, type InProcessServer } from '../support/app';

let server: InProcessServer;
let client: OpenAI;
beforeAll(async () => {
	server = await startInProcessServer({ args: ['--log-level', 'silent'] });
	client = new OpenAI({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
});
afterAll(() => server.stop({ removeData: true }));

async function completed(id: string): Promise<OpenAI.Videos.Video> {
	for (let attempt = 0; attempt < 600; attempt++) {
		const video = await client.videos.retrieve(id);
		if (video.status === 'completed' || video.status === 'failed') return video;
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	throw new Error(`video ${id} did not end`);
}

test('create (multipart), retrieve until completed, download the MP4 and its thumbnail', async () => {
	const created = await client.videos.create({ model: 'p-video', prompt: 'a paper boat on a pond', seconds: '4' as never, size: '1280x720' });
	expect(created).toMatchObject({ object: 'video', model: 'p-video', status: 'in_progress', seconds: '4', size: '1280x720' });
	expect(created.id).toMatch(/^video_[0-9a-f]{32}$/);
	const video = await completed(created.id);
	expect(video).toMatchObject({ status: 'completed', progress: 100, seconds: '4', size: '1280x720', error: null });
	expect(video.completed_at).toEqual(expect.any(Number));
	expect(video.expires_at).toBeGreaterThan(video.created_at);
	expect((video as unknown as { usage: unknown }).usage).toEqual({ seconds: 4, cost_usd: 0.08 });

	const content = await client.videos.downloadContent(video.id);
	expect(content.headers.get('content-type')).toBe('video/mp4');
	const path = join(server.dataDir, 'downloaded.mp4');
	const bytes = Buffer.from(await content.arrayBuffer());
	await writeFile(path, bytes);
	// Signed by us as made by the model, and c2pa-rs validates the manifest against the bytes served.
	const report = await readC2paManifest(bytes, 'video/mp4', ownTrustAnchor(server.dataDir));
	expect(report!.validation_state).toMatch(/Valid|Trusted/);
	expect(actionsOf(report!)).toEqual([expect.objectContaining({ action: 'c2pa.created', digitalSourceType: TRAINED_ALGORITHMIC_MEDIA, softwareAgent: { name: 'p-video' } })]);
	const probed = await probeVideo(path);
	expect(probed).toMatchObject({ codec: 'h264', width: 1280, height: 720, fps: 24 });
	expect(probed.durationSeconds).toBeCloseTo(4, 0);

	const thumbnail = await client.videos.downloadContent(video.id, { variant: 'thumbnail' });
	const still = await sharp(Buffer.from(await thumbnail.arrayBuffer())).metadata();
	expect(still).toMatchObject({ format: 'webp', width: 1280, height: 720 });

	const ranged = await fetch(`${server.baseUrl}/videos/${video.id}/content`, { headers: { authorization: `Bearer ${server.apiKey}`, range: 'bytes=0-99' } });
	expect(ranged.status).toBe(206);
	expect((await ranged.arrayBuffer()).byteLength).toBe(100);
});

test('a first frame as a file part: the video follows its shape', async () => {
	const frame = await sharp({ create: { width: 600, height: 800, channels: 3, background: '#3366cc' } }).png().toBuffer();
	const created = await client.videos.create({ model: 'p-video', prompt: 'the sky opens', seconds: '1' as never, input_reference: await toFile(frame, 'frame.png', { type: 'image/png' }) });
	const video = await completed(created.id);
	expect(video.status).toBe('completed');
	expect(video.size).toBe('720x960');
});

test('list newest first with after and limit; cancel a finished one answers it; delete removes it', async () => {
	const first = await completed((await client.videos.create({ model: 'p-video', prompt: 'one', seconds: '1' as never })).id);
	const second = await completed((await client.videos.create({ model: 'p-video', prompt: 'two', seconds: '1' as never })).id);
	const page = await client.videos.list({ limit: 1 });
	expect(page.data.map((video) => video.id)).toEqual([second.id]);
	const next = await client.videos.list({ limit: 1, after: second.id });
	expect(next.data.map((video) => video.id)).toEqual([first.id]);

	const canceled = await client.videos.retrieve(first.id);
	expect(canceled.status).toBe('completed');
	const deleted = await client.videos.delete(first.id);
	expect(deleted).toEqual({ id: first.id, object: 'video.deleted', deleted: true });
	await expect(client.videos.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
});

test('a refused field comes back as the BadRequestError naming it', async () => {
	const refused = client.videos.create({ model: 'p-video', prompt: 'too long', seconds: '12' as never });
	await expect(refused).rejects.toBeInstanceOf(OpenAI.BadRequestError);
	await expect(refused).rejects.toMatchObject({ status: 400, param: 'seconds' });
	await expect(client.videos.create({ model: 'sora-2', prompt: 'x' })).rejects.toMatchObject({ status: 400, param: 'model' });
});

test('a first frame that is not an image is the create call\'s 400 naming it; no job is made', async () => {
	const before = (await client.videos.list({ limit: 100 })).data.length;
	const notAnImage = await toFile(Buffer.from('just some text, not a picture'), 'frame.png', { type: 'image/png' });
	const refused = client.videos.create({ model: 'p-video', prompt: 'x', input_reference: notAnImage });
	await expect(refused).rejects.toMatchObject({ status: 400, param: 'input_reference' });
	const unreachable = fetch(`${server.baseUrl}/videos`, {
		method: 'POST',
		headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-video', prompt: 'x', image: 'http://127.0.0.1:9/frame.png' }),
	}).then(async (response) => ({ status: response.status, body: (await response.json()) as { error: { param: string } } }));
	await expect(unreachable).resolves.toMatchObject({ status: 400, body: { error: { param: 'image' } } });
	expect((await client.videos.list({ limit: 100 })).data).toHaveLength(before);
});
