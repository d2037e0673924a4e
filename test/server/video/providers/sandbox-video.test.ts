/**
 * The video sandbox renders a real H.264 MP4 with ffmpeg: read back by ffprobe (an independent
 * reader) for codec, profile, pixel format, size, rate, length and audio; byte-identical for the
 * same request, different for another seed or prompt; opening on a given first frame; following a
 * given audio track's length. Clips are short and small where size is not the point.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { videoDimensions } from '../../../../core/video-models';
import { parseVideoRequest } from '../../../../core/video-schemas';
import { ffmpegPath } from '../../../../server/src/media/ffmpeg';
import { inspectMp4 } from '../../../../server/src/media/mp4';
import { sandboxVideoProvider } from '../../../../server/src/video/providers/sandbox-video';
import type { SettledVideoRequest, VideoContext, VideoInputField } from '../../../../server/src/video/video-provider';
import { probeVideo } from '../../../helpers/ffprobe';

jest.setTimeout(60_000);

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'sandbox-video-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

let dirs = 0;
function settled(fields: Record<string, unknown>, frame = { width: 160, height: 96 }, seed = 7): SettledVideoRequest {
	return { ...parseVideoRequest({ model: 'p-video', prompt: 'A lighthouse at dusk', seconds: 1, save_audio: false, ...fields }), seed, ...frame };
}

function context(inputs: Partial<Record<VideoInputField, Buffer>> = {}, signal = new AbortController().signal): VideoContext {
	return {
		signal,
		workDir: join(root, String(dirs++)),
		loadInput: async (field) => inputs[field] ?? Promise.reject(new Error(`no ${field} here`)),
	};
}

async function render(request: SettledVideoRequest, inputs: Partial<Record<VideoInputField, Buffer>> = {}): Promise<string> {
	const work = context(inputs);
	await mkdir(work.workDir, { recursive: true });
	const video = await sandboxVideoProvider().generate(request, work);
	if (!('file' in video)) throw new Error('the sandbox answers a file');
	expect(video.file).toBe(join(work.workDir, 'sandbox.mp4'));
	return video.file;
}

const run = promisify(execFile);

/** The mean colour of a video's first frame. */
async function firstFrameMean(mp4: string): Promise<number[]> {
	const png = join(root, `frame-${dirs++}.png`);
	await run(ffmpegPath(), ['-v', 'error', '-i', mp4, '-frames:v', '1', '-y', png]);
	const { channels } = await sharp(png).stats();
	return channels.slice(0, 3).map((channel) => channel.mean);
}

describe('the video sandbox', () => {
	test('a catalog frame (16:9 at 720p): H.264 Main, yuv420p, faststart, the exact size, rate and length, no audio when not asked', async () => {
		const frame = videoDimensions('16:9', '720p');
		const mp4 = await render(settled({ seconds: 1, fps: 24 }, frame));
		const probed = await probeVideo(mp4);
		expect(probed).toMatchObject({ codec: 'h264', profile: 'Main', pixFmt: 'yuv420p', width: 1280, height: 720, sampleAspectRatio: '1:1', fps: 24, frames: 24 });
		expect(probed.durationSeconds).toBeCloseTo(1, 1);
		expect(probed.audio).toBeUndefined();
		expect(await inspectMp4(mp4)).toMatchObject({ width: 1280, height: 720, hasAudio: false, faststart: true });
	});

	test('48 fps for 2 s is 96 frames, square pixels at a size the cells do not divide; save_audio adds an AAC track as long as the video', async () => {
		const mp4 = await render(settled({ seconds: 2, fps: 48, save_audio: true }, { width: 200, height: 122 }));
		const probed = await probeVideo(mp4);
		expect(probed).toMatchObject({ codec: 'h264', width: 200, height: 122, sampleAspectRatio: '1:1', fps: 48, frames: 96 });
		expect(await inspectMp4(mp4)).toMatchObject({ width: 200, height: 122, hasAudio: true });
		expect(Math.abs(probed.durationSeconds - 2)).toBeLessThanOrEqual(1 / 48);
		expect(probed.audio?.codec).toBe('aac');
		expect(Math.abs(probed.audio!.durationSeconds - 2)).toBeLessThan(0.05);
	});

	test('the same prompt and seed give the same bytes; another seed or prompt another picture', async () => {
		const request = settled({ save_audio: true });
		const [first, again, otherSeed, otherPrompt] = await Promise.all([
			render(request),
			render(request),
			render(settled({ save_audio: true }, undefined, 8)),
			render({ ...request, prompt: 'A harbour at dawn' }),
		]);
		const bytes = await readFile(first);
		expect((await readFile(again)).equals(bytes)).toBe(true);
		expect((await readFile(otherSeed)).equals(bytes)).toBe(false);
		expect((await readFile(otherPrompt)).equals(bytes)).toBe(false);
		const means = await Promise.all([first, otherSeed, otherPrompt].map(firstFrameMean));
		expect(means[1]).not.toStrictEqual(means[0]);
		expect(means[2]).not.toStrictEqual(means[0]);
	});

	test('a first frame opens the video: its first frame is the given picture', async () => {
		const picture = await sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 30, g: 160, b: 220 } } }).jpeg().toBuffer();
		const mp4 = await render(settled({ image: 'https://images.example/first.jpg' }), { image: picture });
		const [r, g, b] = await firstFrameMean(mp4);
		expect(Math.abs(r! - 30)).toBeLessThan(8);
		expect(Math.abs(g! - 160)).toBeLessThan(8);
		expect(Math.abs(b! - 220)).toBeLessThan(8);
		expect(await probeVideo(mp4)).toMatchObject({ width: 160, height: 96, frames: 24 });
	});

	test('a given audio track is the track and sets the length', async () => {
		const wav = join(root, 'tone.wav');
		await run(ffmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=2.5', '-y', wav]);
		const probed = await probeVideo(await render(settled({ seconds: 5, save_audio: true, audio: 'https://audio.example/tone.wav' }), { audio: await readFile(wav) }));
		expect(probed.frames).toBe(60);
		expect(Math.abs(probed.durationSeconds - 2.5)).toBeLessThanOrEqual(1 / 24);
		expect(probed.audio?.codec).toBe('aac');
		expect(Math.abs(probed.audio!.durationSeconds - 2.5)).toBeLessThan(0.05);
	});

	test('a track longer than the catalog allows is cut at its 10 s', async () => {
		const wav = join(root, 'long.wav');
		await run(ffmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=12', '-ar', '8000', '-y', wav]);
		const probed = await probeVideo(await render(settled({ save_audio: true, audio: 'https://audio.example/long.wav' }, { width: 64, height: 64 }), { audio: await readFile(wav) }));
		expect(probed.frames).toBe(240);
		expect(Math.abs(probed.audio!.durationSeconds - 10)).toBeLessThan(0.05);
	});

	test('a stop ends the delay at once with the stop’s reason, before anything is read', async () => {
		const controller = new AbortController();
		const work = context({}, controller.signal);
		const loadInput = jest.spyOn(work, 'loadInput');
		const generated = sandboxVideoProvider(60_000).generate(settled({ image: 'https://images.example/first.jpg' }), work);
		const reason = new Error('canceled');
		setTimeout(() => controller.abort(reason), 20);
		await expect(generated).rejects.toBe(reason);
		expect(loadInput).not.toHaveBeenCalled();
	});

	test('a stop during the render kills ffmpeg and rejects with the stop’s reason', async () => {
		const controller = new AbortController();
		const work = context({}, controller.signal);
		await mkdir(work.workDir, { recursive: true });
		const started = Date.now();
		const generated = sandboxVideoProvider().generate(settled({ seconds: 10, fps: 48 }, videoDimensions('16:9', '1080p')), work);
		const reason = new Error('canceled');
		setTimeout(() => controller.abort(reason), 200);
		await expect(generated).rejects.toBe(reason);
		expect(Date.now() - started).toBeLessThan(3_000);
	});
});
