/**
 * `sandbox` for video: offline and free, for development and tests. It renders a real, short H.264
 * MP4 with ffmpeg instead of running a model: a Game of Life pattern in colours drawn from the
 * prompt and seed, so the same request gives the same file byte for byte and another seed or
 * prompt another picture. A first frame opens the video and fades into the pattern; `save_audio`
 * adds a quiet tone, or the given audio track, whose length the video then follows.
 * `--sandbox-delay-ms` makes it wait first, like a host that takes its time.
 */
import { createHash } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VIDEO_MODELS } from '../../../../core/video-models';
import { runFfmpeg } from '../../media/ffmpeg';
import sharp from '../../media/sharp';
import { pause } from '../../generation/providers/sandbox';
import type { SettledVideoRequest, VideoContext, VideoProvider } from '../video-provider';

const AUDIO_RATE = 48_000;
const AUDIO_CHANNELS = 2;
/** Bytes per second of the decoded audio track (16-bit samples). */
const AUDIO_BYTES_PER_SECOND = AUDIO_RATE * AUDIO_CHANNELS * 2;
/** Life cells are this many pixels wide, so the pattern reads as shapes rather than noise. */
const CELL_PIXELS = 16;
/** How long the first frame takes to give way to the pattern. */
const FIRST_FRAME_FADE_SECONDS = 1.5;

/** What the pattern looks like, read off a hash of the prompt and the seed. */
interface Look {
	lifeSeed: number;
	/** Share of cells alive at the start, 0.2–0.5. */
	ratio: string;
	mold: number;
	lifeColor: string;
	deathColor: string;
	moldColor: string;
	toneHz: number;
}

function lookOf(request: SettledVideoRequest): Look {
	const hash = createHash('sha256').update(JSON.stringify([request.prompt, request.seed])).digest();
	const colour = (at: number) => `0x${hash.subarray(at, at + 3).toString('hex')}`;
	return {
		lifeSeed: hash.readUInt32BE(0),
		ratio: (0.2 + (hash[4]! / 255) * 0.3).toFixed(3),
		mold: 4 + (hash[5]! % 24),
		lifeColor: colour(6),
		deathColor: colour(9),
		moldColor: colour(12),
		toneHz: 220 + hash.readUInt16BE(15) % 440,
	};
}

/** The pattern, `frames` frames of the request's size and rate, labelled `[pattern]`. */
function patternFilter(request: SettledVideoRequest, look: Look, frames: number): string {
	const cellsWide = Math.max(2, Math.ceil(request.width / CELL_PIXELS));
	const cellsHigh = Math.max(2, Math.ceil(request.height / CELL_PIXELS));
	const life = [
		`life=s=${cellsWide}x${cellsHigh}`,
		`rate=${request.fps}`,
		`seed=${look.lifeSeed}`,
		`ratio=${look.ratio}`,
		`mold=${look.mold}`,
		`life_color=${look.lifeColor}`,
		`death_color=${look.deathColor}`,
		`mold_color=${look.moldColor}`,
		'stitch=1',
	].join(':');
	// Cells that do not divide the frame are stretched a little; setsar keeps the pixels square, so
	// players show the frame at exactly the asked size.
	return `${life},scale=${request.width}:${request.height}:flags=neighbor,setsar=1,format=yuv420p,trim=end_frame=${frames},setpts=PTS-STARTPTS[pattern]`;
}

/** The first frame (input 0, already the frame's size) shown first and faded into the pattern. */
function openingFilter(request: SettledVideoRequest, frames: number): string {
	const fade = `min(T/${FIRST_FRAME_FADE_SECONDS},1)`;
	return [
		`[0:v]format=yuv420p,fps=${request.fps},trim=end_frame=${frames},setpts=PTS-STARTPTS[opening]`,
		`[opening][pattern]blend=all_expr='A*(1-${fade})+B*${fade}':shortest=1[video]`,
	].join(';');
}

interface Inputs {
	/** The first frame, as a PNG of the frame's size. */
	firstFrame?: string;
	/** The given audio decoded to raw 16-bit PCM, and its length. */
	audio?: { path: string; seconds: number };
}

/** ffmpeg's arguments: inputs, the filter graph, then encoder settings that keep output identical run to run. */
function renderArguments(request: SettledVideoRequest, inputs: Inputs, out: string): string[] {
	const look = lookOf(request);
	const seconds = inputs.audio?.seconds ?? request.seconds;
	const frames = Math.max(1, Math.round(seconds * request.fps));
	const length = (frames / request.fps).toFixed(6);
	const args: string[] = [];
	const graph = [patternFilter(request, look, frames)];
	if (inputs.firstFrame !== undefined) {
		args.push('-loop', '1', '-framerate', String(request.fps), '-i', inputs.firstFrame);
		graph.push(openingFilter(request, frames));
	} else graph[0] = graph[0]!.replace(/\[pattern\]$/, '[video]');
	if (request.save_audio && inputs.audio !== undefined) {
		args.push('-f', 's16le', '-ar', String(AUDIO_RATE), '-ac', String(AUDIO_CHANNELS), '-i', inputs.audio.path);
		graph.push(`[${inputs.firstFrame === undefined ? 0 : 1}:a]atrim=end=${length}[audio]`);
	} else if (request.save_audio) {
		graph.push(`sine=frequency=${look.toneHz}:sample_rate=${AUDIO_RATE}:duration=${length},volume=0.08,aformat=channel_layouts=stereo[audio]`);
	}
	args.push('-filter_complex', graph.join(';'), '-map', '[video]');
	if (request.save_audio) args.push('-map', '[audio]', '-c:a', 'aac', '-b:a', '96k');
	return [
		...args,
		// The fastest preset with CABAC put back: a Main-profile stream every browser plays, rendered in
		// a fraction of the slower presets' time.
		...['-c:v', 'libx264', '-preset', 'ultrafast', '-x264-params', 'cabac=1', '-profile:v', 'high', '-pix_fmt', 'yuv420p', '-crf', '26'],
		// x264 is deterministic for a fixed thread count; the count would otherwise follow the host's cores.
		...['-threads:v', '2', '-r', String(request.fps)],
		// No encoder versions, dates or metadata in the file: only the request decides its bytes.
		...['-fflags', '+bitexact', '-flags:v', '+bitexact', '-flags:a', '+bitexact', '-map_metadata', '-1'],
		...['-movflags', '+faststart', '-y', out],
	];
}

/** The first frame as a PNG covering the frame, so ffmpeg reads one known format of the right size. */
async function prepareFirstFrame(request: SettledVideoRequest, context: VideoContext): Promise<string | undefined> {
	if (request.image === undefined) return undefined;
	const bytes = await context.loadInput('image');
	const path = join(context.workDir, 'sandbox-first-frame.png');
	await sharp(bytes).rotate().resize(request.width, request.height, { fit: 'cover' }).removeAlpha().png().toFile(path);
	return path;
}

/** The given audio decoded to raw PCM (its size gives its length exactly), cut at the catalog's longest video. */
async function prepareAudio(request: SettledVideoRequest, context: VideoContext): Promise<Inputs['audio']> {
	if (request.audio === undefined) return undefined;
	const source = join(context.workDir, 'sandbox-audio-input');
	await writeFile(source, await context.loadInput('audio'));
	const path = join(context.workDir, 'sandbox-audio.pcm');
	const maxSeconds = VIDEO_MODELS[request.model].maxSeconds;
	const args = ['-i', source, '-vn', '-t', String(maxSeconds), '-ac', String(AUDIO_CHANNELS), '-ar', String(AUDIO_RATE), '-f', 's16le', '-y', path];
	await runFfmpeg(args, { signal: context.signal, what: "read the request's audio", timeoutMs: 60_000 });
	const seconds = (await stat(path)).size / AUDIO_BYTES_PER_SECOND;
	if (seconds <= 0) throw new Error("the request's audio has no samples");
	return { path, seconds: Math.min(seconds, maxSeconds) };
}

export function sandboxVideoProvider(delayMs = 0): VideoProvider {
	return {
		name: 'sandbox',
		async generate(request, context) {
			if (delayMs > 0) await pause(delayMs, context.signal);
			const firstFrame = await prepareFirstFrame(request, context);
			const audio = await prepareAudio(request, context);
			context.signal.throwIfAborted();
			const file = join(context.workDir, 'sandbox.mp4');
			await runFfmpeg(renderArguments(request, { firstFrame, audio }, file), { signal: context.signal, what: 'render the sandbox video', timeoutMs: 300_000 });
			return { file };
		},
	};
}
