/**
 * The thumbnail of a video: its first frame as WebP, of the video's size and looking like that
 * frame; a file that is not a video fails naming what failed, and a stop ends the work.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { ffmpegPath } from '../../../server/src/media/ffmpeg';
import { writeVideoStill } from '../../../server/src/video/video-still';
import { probeVideo } from '../../helpers/ffprobe';

jest.setTimeout(30_000);

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'video-still-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

/** An H.264 MP4 that opens on one colour for a second, then turns to another. */
async function twoColourVideo(name: string, size: string): Promise<string> {
	const path = join(root, name);
	const colours = ['-f', 'lavfi', '-i', `color=c=0xd02828:size=${size}:rate=24:duration=1`, '-f', 'lavfi', '-i', `color=c=0x2050e0:size=${size}:rate=24:duration=1`];
	const encode = ['-filter_complex', '[0:v][1:v]concat=n=2:v=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'];
	await promisify(execFile)(ffmpegPath(), ['-v', 'error', ...colours, ...encode, '-y', path]);
	return path;
}

describe('writeVideoStill', () => {
	test('the first frame as WebP, of the video’s size and colour', async () => {
		const mp4 = await twoColourVideo('wide.mp4', '320x180');
		const out = join(root, 'wide.webp');
		const size = await writeVideoStill(mp4, out);
		const probed = await probeVideo(mp4);
		expect(size).toStrictEqual({ width: probed.width, height: probed.height });
		expect(size).toStrictEqual({ width: 320, height: 180 });
		const metadata = await sharp(out).metadata();
		expect(metadata).toMatchObject({ format: 'webp', width: 320, height: 180 });
		const [r, g, b] = (await sharp(out).stats()).channels.map((channel) => channel.mean);
		expect(Math.abs(r! - 0xd0)).toBeLessThan(10);
		expect(Math.abs(g! - 0x28)).toBeLessThan(10);
		expect(Math.abs(b! - 0x28)).toBeLessThan(10);
	});

	test('a portrait video gives a portrait still', async () => {
		expect(await writeVideoStill(await twoColourVideo('tall.mp4', '96x160'), join(root, 'tall.webp'))).toStrictEqual({ width: 96, height: 160 });
	});

	test('a file that is not a video fails naming what failed', async () => {
		const text = join(root, 'notes.mp4');
		await writeFile(text, 'not a video at all');
		await expect(writeVideoStill(text, join(root, 'notes.webp'))).rejects.toThrow(/^ffmpeg could not take the first frame of the video \(it exited with code 1\)/);
	});

	test('a stop rejects with its reason', async () => {
		const mp4 = await twoColourVideo('stopped.mp4', '64x64');
		const reason = new Error('canceled');
		await expect(writeVideoStill(mp4, join(root, 'stopped.webp'), AbortSignal.abort(reason))).rejects.toBe(reason);
	});
});
