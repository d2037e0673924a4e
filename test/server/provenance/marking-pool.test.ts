/**
 * The marking pool (server/src/provenance/marking-pool.ts) with real worker threads running the
 * built worker (`npm run build` first): its marks validate like the in-thread marker's, a worker
 * that dies fails only the image it held (503) and is replaced, the queue is bounded, and close()
 * lets every accepted image finish.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sniffMedia } from '../../../core/media';
import { MarkingPool } from '../../../server/src/provenance/marking-pool';
import { loadSigningCredentials, type SigningCredentials } from '../../../server/src/provenance/signing-credentials';
import { SERVER_CLI } from '../../helpers/server';
import { readC2paManifest } from '../support/c2pa-reader';
import { makeImage } from '../support/media';
import sharp from 'sharp';
import { newProvenancePayload } from '../../../server/src/provenance/provenance-records';
import { detectWatermarkInImage } from '../../../server/src/provenance/watermark/encoded-image';
import { unmarkedImage } from './support/marked-images';

const BUILT_WORKER = join(SERVER_CLI, '..', 'provenance', 'marking-worker.js');
let dir: string;
let credentials: SigningCredentials;
let png: Buffer;
const pools: MarkingPool[] = [];

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-marking-pool-'));
	credentials = await loadSigningCredentials({ dataDir: dir, organization: 'imagegen-server tests' });
	png = await makeImage('png', 256, 256);
});
afterAll(async () => {
	await Promise.all(pools.map((pool) => pool.close()));
	rmSync(dir, { recursive: true, force: true });
});

function pool(options: { threads?: number; maxQueued?: number; workerScript?: string } = {}): MarkingPool {
	const created = new MarkingPool({
		workerData: { key: credentials.key, chain: credentials.chain, includePrompt: false, creatorTool: 'imagegen-server 0.0.0-test' },
		workerScript: BUILT_WORKER,
		...options,
	});
	pools.push(created);
	return created;
}

const generated = (prompt = 'a lighthouse') => ({ bytes: png, media: sniffMedia(png)!, model: 'p-image', prompt });

it('marks in a worker thread with a manifest that validates', async () => {
	const marked = await pool().markGenerated(generated());
	expect(marked.provenance).toEqual({ c2pa: 'signed', digital_source_type: expect.stringContaining('trainedAlgorithmicMedia') });
	expect(Buffer.isBuffer(marked.bytes)).toBe(true);
	const report = await readC2paManifest(marked.bytes, 'image/png');
	expect(report?.validation_state).toBe('Valid');
});

it('a fitted image’s pixels are handed to the worker, not copied, and come back encoded with the watermark in them', async () => {
	const provided = await unmarkedImage('png', 640, 480);
	const { data, info } = await sharp(provided).resize(720, 720).raw().toBuffer({ resolveWithObject: true });
	const payload = newProvenancePayload();
	const marking = pool().markGenerated({
		pixels: { data, info: { width: info.width, height: info.height, channels: info.channels } },
		media: sniffMedia(provided)!,
		model: 'p-image',
		prompt: 'a harbour',
		source: { bytes: provided, media: sniffMedia(provided)!, changes: ['resized'] },
		watermark: payload,
	});
	// Handed over on submission (emptied here at once), not copied.
	expect(data.byteLength).toBe(0);
	const marked = await marking;
	expect(await sharp(marked.bytes).metadata()).toMatchObject({ format: 'png', width: 720, height: 720 });
	const reading = await detectWatermarkInImage(marked.bytes);
	expect(reading.found && Buffer.from(reading.payload).equals(Buffer.from(payload))).toBe(true);
	expect((await readC2paManifest(marked.bytes, 'image/png'))?.validation_state).toBe('Valid');
	// The provider's image is the caller's still: it went to the worker as a copy.
	expect(provided.byteLength).toBeGreaterThan(0);
});

it('a worker that dies fails only the image it held, with a 503, and the next image is marked by its replacement', async () => {
	// The built worker behind a guard that ends its thread on one prompt, as a crash in c2pa-rs would.
	const dying = join(dir, 'dying-worker.js');
	writeFileSync(
		dying,
		`const mark = require(${JSON.stringify(BUILT_WORKER)}).default;
		module.exports = (job) => (job.facts.prompt === 'die' ? process.exit(3) : mark(job));`,
	);
	const marker = pool({ workerScript: dying });
	const [died, lived] = await Promise.allSettled([marker.markGenerated(generated('die')), marker.markGenerated(generated('live'))]);
	expect(died.status).toBe('rejected');
	expect((died as PromiseRejectedResult).reason).toMatchObject({ status: 503, code: 'provenance_unavailable' });
	expect(lived).toMatchObject({ status: 'fulfilled', value: { provenance: { c2pa: 'signed' } } });
	expect((await marker.markGenerated(generated('after'))).provenance.c2pa).toBe('signed');
});

it('refuses images past its queue at once (503 provenance_busy) instead of letting them wait', async () => {
	const marker = pool({ threads: 1, maxQueued: 2 });
	const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => marker.markGenerated(generated())));
	const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
	// One being marked and two waiting; the other three are refused.
	expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(3);
	expect(refused.map((outcome) => (outcome as PromiseRejectedResult).reason)).toEqual(Array(3).fill(expect.objectContaining({ status: 503, code: 'provenance_busy' })));
});

it('close() lets every accepted image finish, then refuses new ones', async () => {
	const marker = pool({ threads: 1 });
	const accepted = Array.from({ length: 5 }, () => marker.markGenerated(generated()));
	await marker.close();
	const marked = await Promise.all(accepted);
	expect(marked.map((image) => image.provenance.c2pa)).toEqual(Array(5).fill('signed'));
	await expect(marker.markGenerated(generated())).rejects.toMatchObject({ status: 503, code: 'provenance_unavailable' });
});

it('a marking that fails fails its image only (not as a lost worker), and the same worker marks the next', async () => {
	const marker = pool({ threads: 1 });
	const broken = { ...generated(), bytes: Buffer.from('not a png at all') };
	const failure = await marker.markGenerated(broken).then(
		() => undefined,
		(error: unknown) => error,
	);
	expect(failure).toBeInstanceOf(Error);
	expect((failure as Error).message).toMatch(/^marking the image failed: /);
	expect(failure).not.toMatchObject({ code: 'provenance_unavailable' });
	expect((await marker.markGenerated(generated())).provenance.c2pa).toBe('signed');
});

it('hands the marked bytes back without copying them: the worker is left without its copy', async () => {
	// The built worker behind a probe that keeps each answer and, asked, says what is left of its bytes there.
	const probing = join(dir, 'probing-worker.js');
	writeFileSync(
		probing,
		`const { valueSymbol } = require(${JSON.stringify(require.resolve('piscina'))});
		const mark = require(${JSON.stringify(BUILT_WORKER)}).default;
		let last;
		module.exports = async (job) => {
			if (job.facts.prompt === 'probe') return { failed: 'bytes left: ' + last[valueSymbol].marked.bytes.byteLength };
			return (last = await mark(job));
		};`,
	);
	const marker = pool({ threads: 1, workerScript: probing });
	const marked = await marker.markGenerated(generated());
	expect(marked.bytes.length).toBeGreaterThan(png.length);
	await expect(marker.markGenerated(generated('probe'))).rejects.toThrow('marking the image failed: bytes left: 0');
});

it('gives back its own copies of an image once marked, instead of leaving them to a collection the worker rarely runs', async () => {
	// The built worker behind a probe that keeps each job and, asked, says what is left of its copies there.
	const probing = join(dir, 'job-keeping-worker.js');
	writeFileSync(
		probing,
		`const mark = require(${JSON.stringify(BUILT_WORKER)}).default;
		let last;
		module.exports = async (job) => {
			if (job.facts.prompt === 'probe') return { failed: 'bytes left: ' + last.facts.bytes.byteLength + ' and ' + last.facts.source.bytes.byteLength };
			last = job;
			return mark(job);
		};`,
	);
	const marker = pool({ threads: 1, workerScript: probing });
	const image = { ...generated(), source: { bytes: Buffer.concat([png, Buffer.alloc(8192)]), media: sniffMedia(png)!, changes: ['resized' as const] } };
	const marked = await marker.markGenerated(image);
	expect(marked.provenance.c2pa).toBe('signed');
	// The service's own bytes were copied to the worker, not taken from it.
	expect(image.bytes.byteLength).toBe(png.length);
	await expect(marker.markGenerated(generated('probe'))).rejects.toThrow('marking the image failed: bytes left: 0 and 0');
});

it('with several workers, close() still lets every accepted image finish', async () => {
	const marker = pool({ threads: 2 });
	const accepted = Array.from({ length: 6 }, (_, index) => marker.markGenerated(generated(`image ${index}`)));
	await marker.close();
	expect((await Promise.all(accepted)).map((image) => image.provenance.c2pa)).toEqual(Array(6).fill('signed'));
});

it('when no worker can start, fails the images it took (503) and takes no more, instead of letting them wait', async () => {
	const unstartable = join(dir, 'unstartable-worker.js');
	writeFileSync(unstartable, `throw new Error('this worker cannot start');`);
	const marker = pool({ threads: 1, workerScript: unstartable });
	const outcomes = await Promise.allSettled(Array.from({ length: 3 }, () => marker.markGenerated(generated())));
	expect(outcomes.map((outcome) => (outcome as PromiseRejectedResult).reason)).toEqual(Array(3).fill(expect.objectContaining({ status: 503, code: 'provenance_unavailable' })));
	expect(marker.canTake()).toBe(false);
	await expect(marker.markGenerated(generated())).rejects.toMatchObject({ status: 503, code: 'provenance_unavailable' });
});
