// The MP4s the video benches deliver, made once in the OS temp folder and kept for later runs
// (never committed): a real 5 s 720p H.264 clip made with the ffmpeg the service ships, and a
// 500 MB MP4 that is that clip followed by a top-level `free` box of media-sized padding. Players
// and the service's MP4 check (server/src/media/mp4.ts) skip a `free` box, so the large file is a
// whole MP4 whose bytes still all travel: downloaded, counted, stored and read back.
// Each file is written under a name of its own, then renamed into place, so a run that stops
// halfway never leaves half a file under the kept name.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { copyFile, rename, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ffmpeg = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
const PADDING_CHUNK = 1024 * 1024;

const sizeOf = (path) => stat(path).then((file) => file.size, () => 0);

/** A real 5 s, 1280×720, 24 fps H.264 MP4 (moov first), ≈ 1 MB of moving test pattern. */
export async function smallClip() {
	const path = join(tmpdir(), 'imagegen-bench-clip-720p-5s.mp4');
	if ((await sizeOf(path)) > 0) return path;
	const work = `${path}.${process.pid}.part.mp4`;
	const source = ['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=24:duration=5'];
	await promisify(execFile)(ffmpeg, ['-v', 'error', ...source, '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-y', work]);
	await rename(work, path);
	return path;
}

/** The small clip plus a `free` box of random bytes (one random MiB repeated), `totalBytes` in all. */
export async function largeClip(totalBytes = 500 * 1000 * 1000) {
	const path = join(tmpdir(), `imagegen-bench-clip-${Math.round(totalBytes / 1e6)}mb.mp4`);
	if ((await sizeOf(path)) === totalBytes) return path;
	const small = await smallClip();
	const work = `${path}.${process.pid}.part`;
	await copyFile(small, work);
	const paddingBytes = totalBytes - (await sizeOf(small));
	if (paddingBytes >= 2 ** 32) throw new Error('the padding box takes a 32-bit size here: ask for less than 4 GiB');
	const header = Buffer.alloc(8);
	header.writeUInt32BE(paddingBytes, 0);
	header.write('free', 4, 'latin1');
	const chunk = randomBytes(PADDING_CHUNK);
	const out = createWriteStream(work, { flags: 'a' });
	const write = (bytes) => (out.write(bytes) ? Promise.resolve() : new Promise((resolve) => out.once('drain', resolve)));
	await write(header);
	for (let left = paddingBytes - header.length; left > 0; left -= PADDING_CHUNK) await write(left >= PADDING_CHUNK ? chunk : chunk.subarray(0, left));
	await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
	await rename(work, path);
	return path;
}
