/**
 * inspectMp4 reads an MP4's box structure from disk: it agrees with ffprobe (an independent reader)
 * on frame size and length, tells faststart files from others, and refuses with a reason anything
 * that is not a whole MP4 with video — a PNG, a WebM, a QuickTime file, a download cut short, an
 * empty file, audio alone. The files are made by ffmpeg and sharp, not written by hand.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { ffmpegPath } from '../../../server/src/media/ffmpeg';
import { Mp4Error, inspectMp4, looksLikeMp4 } from '../../../server/src/media/mp4';
import { probeVideo } from '../../helpers/ffprobe';

jest.setTimeout(30_000);

const run = promisify(execFile);
let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'mp4-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

/** An ffmpeg-made file from a test pattern (and a tone when `audio`), in `root`. */
async function make(name: string, output: string[], { seconds = 1.5, size = '176x144', audio = false } = {}): Promise<string> {
	const path = join(root, name);
	const inputs = ['-f', 'lavfi', '-i', `testsrc=size=${size}:rate=25:duration=${seconds}`];
	if (audio) inputs.push('-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`);
	await run(ffmpegPath(), ['-v', 'error', ...inputs, ...output, '-y', path]);
	return path;
}

const h264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];

async function refusal(path: string): Promise<string> {
	const error: unknown = await inspectMp4(path).then(
		() => undefined,
		(thrown: unknown) => thrown,
	);
	expect(error).toBeInstanceOf(Mp4Error);
	return (error as Mp4Error).reason;
}

describe('inspectMp4', () => {
	test('a faststart H.264 MP4 with audio: the size and length ffprobe reads, audio, faststart, its brand', async () => {
		const path = await make('faststart.mp4', [...h264, '-c:a', 'aac', '-movflags', '+faststart'], { size: '320x240', audio: true });
		const [info, probed] = await Promise.all([inspectMp4(path), probeVideo(path)]);
		expect(info).toMatchObject({ width: probed.width, height: probed.height, hasAudio: true, faststart: true, brand: 'isom' });
		expect(info.width).toBe(320);
		expect(info.durationSeconds).toBeCloseTo(probed.durationSeconds, 1);
		expect(info.durationSeconds).toBeCloseTo(1.5, 1);
	});

	test('an MP4 with its index at the end and no audio: not faststart, no audio', async () => {
		const path = await make('plain.mp4', h264, { seconds: 2.4, size: '96x64' });
		const [info, probed] = await Promise.all([inspectMp4(path), probeVideo(path)]);
		expect(info).toMatchObject({ width: 96, height: 64, hasAudio: false, faststart: false });
		expect(info.durationSeconds).toBeCloseTo(probed.durationSeconds, 1);
	});

	test('a PNG image is refused as one', async () => {
		const path = join(root, 'picture.png');
		await writeFile(path, await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } }).png().toBuffer());
		expect(await refusal(path)).toBe('it is a PNG image');
	});

	test('a WebM video is refused by its EBML header', async () => {
		const path = await make('clip.webm', ['-c:v', 'libvpx', '-deadline', 'realtime'], { seconds: 0.4 });
		expect(await refusal(path)).toMatch(/WebM/);
	});

	test('a QuickTime file (brand qt) is not the MP4 family', async () => {
		const path = await make('clip.mov', [...h264, '-f', 'mov'], { seconds: 0.4 });
		expect(await refusal(path)).toMatch(/brands \(qt.*\) are not the MP4 family/);
	});

	test('a download cut short is refused as truncated', async () => {
		const whole = await make('whole.mp4', [...h264, '-movflags', '+faststart'], { seconds: 1 });
		const cut = join(root, 'cut.mp4');
		await writeFile(cut, await readFile(whole));
		await truncate(cut, (await readFile(whole)).length - 100);
		expect(await refusal(cut)).toMatch(/^box 'mdat' at \d+ needs \d+ bytes but the file ends after \d+ \(truncated\)$/);
	});

	test('an empty file and a few stray bytes are refused', async () => {
		const empty = join(root, 'empty.mp4');
		await writeFile(empty, Buffer.alloc(0));
		expect(await refusal(empty)).toBe('the file is empty');
		const whole = await readFile(await make('short.mp4', h264, { seconds: 0.2 }));
		const extra = join(root, 'extra.mp4');
		await writeFile(extra, Buffer.concat([whole, Buffer.from([0, 0, 0])]));
		expect(await refusal(extra)).toMatch(/3 stray bytes after the last box/);
	});

	test('audio alone in an MP4 is not a video', async () => {
		const path = join(root, 'tone.mp4');
		await run(ffmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'sine=duration=0.5', '-c:a', 'aac', '-y', path]);
		expect(await refusal(path)).toBe('it has no video track');
	});

	test('looksLikeMp4 reads the ftyp box of the first bytes', async () => {
		const head = (await readFile(await make('head.mp4', h264, { seconds: 0.2 }))).subarray(0, 64);
		expect(looksLikeMp4(head)).toBe(true);
		expect(looksLikeMp4(head.subarray(0, 8))).toBe(false);
		expect(looksLikeMp4(await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } }).png().toBuffer())).toBe(false);
	});
});
