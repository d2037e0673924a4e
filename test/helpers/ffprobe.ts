/**
 * What ffprobe (from `@ffprobe-installer/ffprobe`) reads in a video file: an independent reader, so
 * a test of our own MP4 writing or reading does not check itself.
 */
import { execFile } from 'node:child_process';
import { accessSync, chmodSync, constants, statSync } from 'node:fs';
import { promisify } from 'node:util';

export interface ProbedVideo {
	codec: string;
	profile: string;
	pixFmt: string;
	width: number;
	height: number;
	/** `1:1` for square pixels. */
	sampleAspectRatio: string;
	/** Frames per second, from ffprobe's `avg_frame_rate` fraction. */
	fps: number;
	frames: number;
	/** The video stream's length in seconds. */
	durationSeconds: number;
	audio?: { codec: string; durationSeconds: number; channels: number };
}

let binary: string | undefined;

/**
 * The binary's path. The repository installs with `ignore-scripts`, which skips the package's own
 * install step (`chmod u+x ffprobe`); doing that step here lets a fresh `npm ci` run these tests.
 */
function ffprobePath(): string {
	if (binary === undefined) {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const path = (require('@ffprobe-installer/ffprobe') as { path: string }).path;
		try {
			accessSync(path, constants.X_OK);
		} catch {
			chmodSync(path, statSync(path).mode | 0o100);
		}
		binary = path;
	}
	return binary;
}

interface Stream {
	codec_type: string;
	codec_name: string;
	profile?: string;
	pix_fmt?: string;
	width?: number;
	height?: number;
	sample_aspect_ratio?: string;
	avg_frame_rate?: string;
	nb_frames?: string;
	duration?: string;
	channels?: number;
}

function fraction(text: string): number {
	const [numerator, denominator] = text.split('/').map(Number) as [number, number];
	return numerator / denominator;
}

export async function probeVideo(path: string): Promise<ProbedVideo> {
	const { stdout } = await promisify(execFile)(ffprobePath(), ['-v', 'error', '-show_streams', '-of', 'json', path]);
	const streams = (JSON.parse(stdout) as { streams: Stream[] }).streams;
	const video = streams.find((stream) => stream.codec_type === 'video');
	if (video === undefined) throw new Error(`ffprobe found no video stream in ${path}`);
	const audio = streams.find((stream) => stream.codec_type === 'audio');
	return {
		codec: video.codec_name,
		profile: video.profile ?? '',
		pixFmt: video.pix_fmt ?? '',
		width: video.width ?? 0,
		height: video.height ?? 0,
		sampleAspectRatio: video.sample_aspect_ratio ?? '',
		fps: fraction(video.avg_frame_rate ?? '0/1'),
		frames: Number(video.nb_frames),
		durationSeconds: Number(video.duration),
		...(audio && { audio: { codec: audio.codec_name, durationSeconds: Number(audio.duration), channels: audio.channels ?? 0 } }),
	};
}
