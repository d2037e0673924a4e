/**
 * An input image given as the URL of a file this same service hosts (an upload, an earlier
 * generation) is read from storage, not fetched: on a local set-up that URL is a loopback address,
 * which the address check rightly refuses to fetch. Any other loopback URL is still refused.
 */
import { startInProcessServer, type InProcessServer } from '../support/app';
import { makeImage } from '../support/media';

let server: InProcessServer;
beforeAll(async () => {
	server = await startInProcessServer({ args: ['--log-level', 'silent'] });
});
afterAll(() => server.stop({ removeData: true }));

async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
	const response = await fetch(`${server.origin}${path}`, {
		method: 'POST',
		headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	return { status: response.status, body: await response.json() };
}

test("p-image-edit takes the URL of the service's own hosted image; a foreign loopback URL stays refused", async () => {
	const photo = await makeImage('png', 96, 64);
	const uploaded = await post('/v1/uploads', { file: `data:image/png;base64,${photo.toString('base64')}` });
	expect(uploaded.status).toBe(200);
	const own = uploaded.body.imageUrl as string;
	expect(new URL(own).hostname).toBe('127.0.0.1');

	const edited = await post('/v1/images/generations', { model: 'p-image-edit', prompt: 'make it dusk', images: [own], response_format: 'url' });
	expect(edited.status).toBe(200);
	expect(edited.body.data).toHaveLength(1);

	const video = await post('/v1/videos', { model: 'p-video', prompt: 'it moves', seconds: 1, image: own });
	expect(video.status).toBe(200);

	const foreign = await post('/v1/images/generations', { model: 'p-image-edit', prompt: 'x', images: [`${server.origin}/not-a-file.png`] });
	expect(foreign.status).toBe(400);
	expect(foreign.body.error.param).toBe('images[0]');
	const gone = await post('/v1/images/generations', { model: 'p-image-edit', prompt: 'x', images: [`${server.origin}/files/AAAAAAAAAAAAAAAAAAAAAAAA.png`] });
	expect(gone.status).toBe(400);
	expect(gone.body.error.param).toBe('images[0]');
});
