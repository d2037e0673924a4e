/**
 * Generated videos carry a C2PA manifest (server/src/provenance/sign-video.ts), checked by readers
 * nobody here wrote: c2pa-rs validates the claim, signature, actions and the BMFF hash binding;
 * ffprobe says the signed file still plays as the same video. The MP4s are made here with ffmpeg.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sniffMedia } from '../../../core/media';
import { runFfmpeg } from '../../../server/src/media/ffmpeg';
import { CoseSigner } from '../../../server/src/provenance/cose-signer';
import { C2paProvenanceMarker, UNMARKED, type VideoMarkingJob } from '../../../server/src/provenance/provenance-marker';
import { loadSigningCredentials } from '../../../server/src/provenance/signing-credentials';
import { signVideo } from '../../../server/src/provenance/sign-video';
import { probeVideo } from '../../helpers/ffprobe';
import { actionsOf, activeManifest, readC2paManifest } from '../support/c2pa-reader';
import { makeImage } from '../support/media';

const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const CREATOR_TOOL = 'imagegen-server 0.0.0-test';

let dir: string;
let signer: CoseSigner;
let marker: C2paProvenanceMarker;
let video: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-video-marks-'));
	const credentials = await loadSigningCredentials({ dataDir: dir, organization: 'imagegen-server tests' });
	signer = new CoseSigner(credentials.key, credentials.chain);
	marker = new C2paProvenanceMarker({ signer, includePrompt: false, creatorTool: CREATOR_TOOL });
	video = join(dir, 'generated.mp4');
	// Twelve frames of ffmpeg's test pattern, H.264 as a video host delivers it (moov after mdat).
	const pattern = ['-f', 'lavfi', '-i', 'testsrc=size=160x96:rate=24', '-frames:v', '12', '-c:v', 'libx264', '-pix_fmt', 'yuv420p'];
	await runFfmpeg(['-loglevel', 'error', ...pattern, video], { what: 'render the test video' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function job(name: string, extra: Partial<VideoMarkingJob> = {}): VideoMarkingJob {
	return { input: video, output: join(dir, `${name}.mp4`), model: 'p-video', generationId: `gen_${name}`, ...extra };
}

/** Where the payload of the file's top-level `mdat` box starts and ends. */
function mdatPayload(bytes: Buffer): { start: number; end: number } {
	for (let offset = 0; offset + 8 <= bytes.length; ) {
		let size = bytes.readUInt32BE(offset);
		let header = 8;
		if (size === 1) {
			size = Number(bytes.readBigUInt64BE(offset + 8));
			header = 16;
		}
		if (bytes.toString('latin1', offset + 4, offset + 8) === 'mdat') return { start: offset + header, end: offset + size };
		offset += size;
	}
	throw new Error('no mdat box');
}

it('signs the MP4 with a manifest that validates: created by the model, trained algorithmic media', async () => {
	const marked = await marker.markVideo(job('signed'));
	expect(marked).toEqual({ marked: true, provenance: { c2pa: 'signed', digital_source_type: TRAINED } });

	const signed = readFileSync(join(dir, 'signed.mp4'));
	const report = await readC2paManifest(signed, 'video/mp4');
	expect(report?.validation_status ?? []).toEqual([]);
	expect(report!.validation_state).toBe('Valid');
	expect(actionsOf(report!)).toEqual([expect.objectContaining({ action: 'c2pa.created', digitalSourceType: TRAINED, softwareAgent: { name: 'p-video' } })]);
	expect(activeManifest(report!).claim_generator_info).toEqual([expect.objectContaining({ name: 'imagegen-server', version: '0.0.0-test' })]);
	expect(activeManifest(report!).assertions.map((assertion) => assertion.label)).toContain('c2pa.hash.bmff.v3');
	// The source is left as it was.
	expect(await readC2paManifest(readFileSync(video), 'video/mp4')).toBeNull();
});

it('the signed MP4 still plays as the same video', async () => {
	await marker.markVideo(job('plays'));
	const [before, after] = await Promise.all([probeVideo(video), probeVideo(join(dir, 'plays.mp4'))]);
	expect(after.codec).toBe('h264');
	expect(after).toEqual(before);
	expect(after.frames).toBe(12);
});

it('changing one byte of the video data breaks the validation', async () => {
	await marker.markVideo(job('tampered'));
	const signed = readFileSync(join(dir, 'tampered.mp4'));
	const { start, end } = mdatPayload(signed);
	const middle = (start + end) >> 1;
	signed.writeUInt8(signed.readUInt8(middle) ^ 0x01, middle);
	const report = await readC2paManifest(signed, 'video/mp4');
	expect(report!.validation_state).toBe('Invalid');
	expect(JSON.stringify(report!.validation_results)).toContain('assertion.bmffHash.mismatch');
});

it('a first frame that carries its own manifest is an ingredient of the video, as an input to the model', async () => {
	const png = await makeImage('png', 96, 64);
	const frame = await marker.markGenerated({ bytes: png, media: sniffMedia(png)!, model: 'p-image', prompt: 'a lighthouse' });
	await marker.markVideo(job('from-frame', { firstFrame: { bytes: frame.bytes, mimeType: 'image/png' } }));

	const report = await readC2paManifest(readFileSync(join(dir, 'from-frame.mp4')), 'video/mp4');
	expect(report?.validation_status ?? []).toEqual([]);
	expect(report!.validation_state).toBe('Valid');
	const [ingredient, ...others] = activeManifest(report!).ingredients ?? [];
	expect(others).toEqual([]);
	expect(ingredient).toMatchObject({ title: 'first-frame.png', relationship: 'inputTo', format: 'image/png' });
	// The frame's own manifest (made by p-image) is in the video's store, and validated when taken in.
	const frameManifest = report!.manifests[ingredient.active_manifest];
	expect(frameManifest?.assertions.find((assertion) => assertion.label.startsWith('c2pa.actions'))?.data.actions[0]).toMatchObject({ action: 'c2pa.created', softwareAgent: { name: 'p-image' } });
	expect(ingredient.validation_results?.activeManifest?.failure ?? []).toEqual([]);
	expect(actionsOf(report!)[0]).toMatchObject({ action: 'c2pa.created', softwareAgent: { name: 'p-video' } });
});

it('a first frame without a manifest of its own adds no ingredient', async () => {
	const png = await makeImage('png', 96, 64);
	await marker.markVideo(job('plain-frame', { firstFrame: { bytes: png, mimeType: 'image/png' } }));
	const report = await readC2paManifest(readFileSync(join(dir, 'plain-frame.mp4')), 'video/mp4');
	expect(report!.validation_state).toBe('Valid');
	expect(activeManifest(report!).ingredients ?? []).toEqual([]);
});

it('a video larger than what is signed is left unmarked, with the reason, and nothing is written', async () => {
	const size = statSync(video).size;
	const marked = await signVideo(job('too-large'), { signer, creatorTool: CREATOR_TOOL, maxBytes: size - 1 });
	expect(marked).toEqual({ marked: false, reason: expect.stringContaining(`${size} bytes`) });
	expect(existsSync(join(dir, 'too-large.mp4'))).toBe(false);
	// At the limit it is signed.
	expect(await signVideo(job('at-limit'), { signer, creatorTool: CREATOR_TOOL, maxBytes: size })).toMatchObject({ marked: true });
});

it('an aborted signal rejects with its reason and leaves no output', async () => {
	const controller = new AbortController();
	controller.abort(new Error('the job was canceled'));
	await expect(marker.markVideo(job('aborted'), controller.signal)).rejects.toThrow('the job was canceled');
	expect(existsSync(join(dir, 'aborted.mp4'))).toBe(false);
});

it('UNMARKED writes nothing and says the video is not marked', async () => {
	expect(await UNMARKED.markVideo(job('unmarked'))).toEqual({ marked: false });
	expect(existsSync(join(dir, 'unmarked.mp4'))).toBe(false);
});
