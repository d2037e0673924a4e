/**
 * Images from 256 KB up are marked in the service's worker threads (server/src/provenance/
 * size-routed-marker.ts), not on its event loop. On the built service, with a model host that
 * answers a 1 MB PNG: the hosted and the inline image both carry a manifest c2pa-rs validates,
 * and /metrics says where they were marked: in a worker, or with `--marking-threads 0` on the
 * event loop.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { startServer, type RunningServer } from '../../helpers/server';
import { startCountingUpstream, type CountingUpstream } from '../support/counting-upstream';
import { readC2paManifest } from '../support/c2pa-reader';
import { call, postJson } from '../support/http';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
let upstream: CountingUpstream;
let pooled: RunningServer;
let withoutPool: RunningServer;

beforeAll(async () => {
	// Noise does not compress: 1024 px (so it is stored as it came) and about 1.1 MB.
	const picture = await sharp(randomBytes(1024 * 1024), { raw: { width: 1024, height: 1024, channels: 1 } }).toColourspace('b-w').png({ compressionLevel: 1 }).toBuffer();
	upstream = await startCountingUpstream(0, { picture });
	const { args, env } = upstream.serverOptions();
	const withThreads = (threads: string) => startServer({ args: [...args, '--admin-key', ADMIN_KEY, '--marking-threads', threads], env });
	[pooled, withoutPool] = await Promise.all([withThreads('1'), withThreads('0')]);
});
afterAll(async () => {
	await Promise.all([pooled, withoutPool].map((server) => server?.stop({ removeData: true })));
	await upstream?.close();
});

/** Generates a hosted and an inline image, checks both, and answers the metrics text after. */
async function generateBoth(server: RunningServer): Promise<string> {
	const images: Buffer[] = [];
	for (const responseFormat of ['url', 'b64_json']) {
		const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'static on a screen', response_format: responseFormat });
		expect(answer.status).toBe(200);
		const [item] = answer.body.data;
		images.push(item.b64_json ? Buffer.from(item.b64_json, 'base64') : Buffer.from(await (await fetch(item.url)).arrayBuffer()));
	}
	for (const bytes of images) {
		expect(bytes.length).toBeGreaterThan(1_000_000);
		expect((await readC2paManifest(bytes, 'image/png'))?.validation_state).toBe('Valid');
	}
	return (await call(server, '/metrics', { auth: `Bearer ${ADMIN_KEY}` })).body as string;
}

it('marks large generated images in a worker, with manifests that validate', async () => {
	const metrics = await generateBoth(pooled);
	expect(metrics).toMatch(/^imagegen_marking_duration_seconds_count\{thread="worker"\} 2$/m);
	expect(metrics).not.toMatch(/^imagegen_marking_duration_seconds_count\{thread="event_loop"\}/m);
});

it('with --marking-threads 0 marks them on the event loop, as validly', async () => {
	const metrics = await generateBoth(withoutPool);
	expect(metrics).toMatch(/^imagegen_marking_duration_seconds_count\{thread="event_loop"\} 2$/m);
	expect(metrics).not.toMatch(/^imagegen_marking_duration_seconds_count\{thread="worker"\}/m);
});
