/**
 * Videos in the marking pool (server/src/provenance/marking-pool.ts) with real worker threads
 * running the built worker (`npm run build` first): the thread signs the MP4 on disk with a manifest
 * that validates, a canceled video stops its thread and leaves nothing behind, and a video above
 * what is signed is answered unmarked without starting a thread.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFfmpeg } from '../../../server/src/media/ffmpeg';
import { MarkingPool } from '../../../server/src/provenance/marking-pool';
import { MAX_SIGNED_VIDEO_BYTES } from '../../../server/src/provenance/sign-video';
import { loadSigningCredentials } from '../../../server/src/provenance/signing-credentials';
import { SERVER_CLI } from '../../helpers/server';
import { actionsOf, readC2paManifest } from '../support/c2pa-reader';

const BUILT_WORKER = join(SERVER_CLI, '..', 'provenance', 'marking-worker.js');
let dir: string;
let pool: MarkingPool;
let video: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-video-pool-'));
	const credentials = await loadSigningCredentials({ dataDir: dir, organization: 'imagegen-server tests' });
	pool = new MarkingPool({ workerData: { key: credentials.key, chain: credentials.chain, includePrompt: false, creatorTool: 'imagegen-server 0.0.0-test' }, workerScript: BUILT_WORKER });
	video = join(dir, 'generated.mp4');
	const pattern = ['-f', 'lavfi', '-i', 'testsrc=size=160x96:rate=24', '-frames:v', '24', '-c:v', 'libx264', '-pix_fmt', 'yuv420p'];
	await runFfmpeg(['-loglevel', 'error', ...pattern, video], { what: 'render the test video' });
});
afterAll(async () => {
	await pool.close();
	rmSync(dir, { recursive: true, force: true });
});

const job = (name: string, input = video) => ({ input, output: join(dir, `${name}.mp4`), model: 'p-video', generationId: `gen_${name}` });

it('signs the video in a worker thread with a manifest that validates', async () => {
	expect(await pool.markVideo(job('signed'))).toMatchObject({ marked: true, provenance: { c2pa: 'signed' } });
	const report = await readC2paManifest(readFileSync(join(dir, 'signed.mp4')), 'video/mp4');
	expect(report?.validation_state).toBe('Valid');
	expect(actionsOf(report!)[0]).toMatchObject({ action: 'c2pa.created', softwareAgent: { name: 'p-video' } });
});

it('a canceled video rejects with the reason, leaves no output, and the next video is signed', async () => {
	const controller = new AbortController();
	const marking = pool.markVideo(job('canceled'), controller.signal);
	setTimeout(() => controller.abort(new Error('the job was canceled')), 20);
	await expect(marking).rejects.toThrow('the job was canceled');
	expect(existsSync(join(dir, 'canceled.mp4'))).toBe(false);
	expect(await pool.markVideo(job('after-cancel'))).toMatchObject({ marked: true });
});

it('a video above MAX_SIGNED_VIDEO_BYTES is answered unmarked, with the reason, and nothing is written', async () => {
	// Only its size is read: a sparse file is enough.
	const large = join(dir, 'large.mp4');
	const fd = openSync(large, 'w');
	ftruncateSync(fd, MAX_SIGNED_VIDEO_BYTES + 1);
	closeSync(fd);
	expect(await pool.markVideo(job('large-signed', large))).toEqual({ marked: false, reason: expect.stringContaining(`${MAX_SIGNED_VIDEO_BYTES + 1} bytes`) });
	expect(existsSync(join(dir, 'large-signed.mp4'))).toBe(false);
});
