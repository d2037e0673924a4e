/**
 * Which marker an image goes to (server/src/provenance/size-routed-marker.ts): small images on the
 * event loop, large ones in the worker pool, and every image marked even when the pool cannot take
 * it. Both markers are the real ones (the pool runs the built worker).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { sniffMedia } from '../../../core/media';
import { CoseSigner } from '../../../server/src/provenance/cose-signer';
import { MarkingPool } from '../../../server/src/provenance/marking-pool';
import { C2paProvenanceMarker } from '../../../server/src/provenance/provenance-marker';
import { loadSigningCredentials, type SigningCredentials } from '../../../server/src/provenance/signing-credentials';
import { OFFLOAD_FROM_BYTES, SizeRoutedMarker, type MarkingThread } from '../../../server/src/provenance/size-routed-marker';
import { SERVER_CLI } from '../../helpers/server';
import { readC2paManifest } from '../support/c2pa-reader';
import { makeImage } from '../support/media';

const BUILT_WORKER = join(SERVER_CLI, '..', 'provenance', 'marking-worker.js');
const CREATOR = 'imagegen-server 0.0.0-test';
let dir: string;
let credentials: SigningCredentials;
let small: Buffer;
let large: Buffer;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-routed-marker-'));
	credentials = await loadSigningCredentials({ dataDir: dir, organization: 'imagegen-server tests' });
	small = await makeImage('png', 64, 64);
	// Noise does not compress: well past the offload size.
	large = await sharp(randomBytes(400 * 400 * 3), { raw: { width: 400, height: 400, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The real markers; `asked` lists where each image was marked, as the metrics learn it. */
function routed(poolOptions: { maxQueued?: number } = {}) {
	const asked: MarkingThread[] = [];
	const inThread = new C2paProvenanceMarker({ signer: new CoseSigner(credentials.key, credentials.chain), includePrompt: false, creatorTool: CREATOR });
	const pool = new MarkingPool({ workerData: { key: credentials.key, chain: credentials.chain, includePrompt: false, creatorTool: CREATOR }, workerScript: BUILT_WORKER, ...poolOptions });
	const marker = new SizeRoutedMarker(inThread, pool, (thread) => asked.push(thread));
	return { marker, asked };
}

const generated = (bytes: Buffer) => ({ bytes, media: sniffMedia(bytes)!, model: 'p-image', prompt: 'a lighthouse' });

it('marks small images on the event loop and large ones in the pool, both with manifests that validate', async () => {
	expect(small.length).toBeLessThan(OFFLOAD_FROM_BYTES);
	expect(large.length).toBeGreaterThanOrEqual(OFFLOAD_FROM_BYTES);
	const { marker, asked } = routed();
	try {
		const marked = [await marker.markGenerated(generated(small)), await marker.markGenerated(generated(large))];
		expect(asked).toEqual(['event_loop', 'worker']);
		for (const image of marked) expect((await readC2paManifest(image.bytes, 'image/png'))?.validation_state).toBe('Valid');
	} finally {
		await marker.close();
	}
});

it('marks a large image on the event loop when the pool is closing: the image is not lost', async () => {
	const { marker, asked } = routed();
	await marker.close();
	const marked = await marker.markGenerated(generated(large));
	expect(asked).toEqual(['event_loop']);
	expect(marked.provenance.c2pa).toBe('signed');
});

it('marks large images on the event loop once the pool queue is full, instead of refusing them', async () => {
	const { marker, asked } = routed({ maxQueued: 1 });
	try {
		const marked = await Promise.all(Array.from({ length: 4 }, () => marker.markGenerated(generated(large))));
		// One being marked in the worker and one waiting; the other two on the event loop.
		expect(asked.filter((thread) => thread === 'worker')).toHaveLength(2);
		expect(asked.filter((thread) => thread === 'event_loop')).toHaveLength(2);
		expect(marked.map((image) => image.provenance.c2pa)).toEqual(Array(4).fill('signed'));
	} finally {
		await marker.close();
	}
});
