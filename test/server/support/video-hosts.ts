/**
 * What the loopback stand-ins of the video hosts share: a real MP4 to deliver (made once per run
 * with the ffmpeg the server ships), a "CDN" on another origin that serves it to anyone (as
 * Replicate's and Pruna's delivery hosts do), and the scripting of a route's next answers.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rename, rm, stat } from 'node:fs/promises';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFfmpeg } from '../../../server/src/media/ffmpeg';
import { startRecordingServer, type RecordedCall, type RecordingServer } from './recording-server';

export type { RecordedCall } from './recording-server';

/** An answer scripted for a route's next calls, instead of what the host would do. */
export interface VideoHostScript {
	status: number;
	body?: unknown;
	headers?: Record<string, string>;
	/** Never answer (the connection stays open until the client gives up). */
	hang?: boolean;
	/** Answer only after this long, as a slow host does. */
	delayMs?: number;
	/** Make the job first, then answer this (a proxy's 502 after the host took the create). */
	afterMaking?: boolean;
}

let made: Promise<string> | undefined;

/**
 * A real one-second H.264 MP4 (a test pattern, 128×72, 24 fps), made once in the system's temp
 * folder and kept for later runs: written under a name of its own, then renamed into place, so
 * suites running side by side never read half a file.
 */
export function testMp4(): Promise<string> {
	made ??= (async () => {
		const path = join(tmpdir(), 'imagegen-video-host-delivery.mp4');
		if (await stat(path).then((file) => file.size > 0, () => false)) return path;
		const work = await mkdtemp(join(tmpdir(), 'video-host-'));
		const source = ['-f', 'lavfi', '-i', 'testsrc=size=128x72:rate=24:duration=1'];
		await runFfmpeg([...source, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-y', join(work, 'delivery.mp4')], { what: 'make the test MP4' });
		await rename(join(work, 'delivery.mp4'), path);
		await rm(work, { recursive: true, force: true });
		return path;
	})();
	return made;
}

/** Sends a scripted answer: at once, after its delay, or never (`hang`). */
export function sendScripted(response: http.ServerResponse, answer: VideoHostScript): void {
	if (answer.hang) return;
	const send = () => sendJson(response, answer.status, answer.body ?? {}, answer.headers);
	if (answer.delayMs) setTimeout(() => !response.destroyed && send(), answer.delayMs);
	else send();
}

export function sendJson(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
	response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Streams the MP4 from disk, with its length, as a delivery host does. */
export async function sendMp4(response: http.ServerResponse, mp4: string): Promise<void> {
	const { size } = await stat(mp4);
	response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(size) });
	createReadStream(mp4).pipe(response);
}

/** A delivery host on an origin of its own: any GET answers the MP4, without asking for a key. */
export async function startVideoCdn(mp4: string): Promise<RecordingServer<RecordedCall>> {
	return await startRecordingServer((call, response) => {
		if (call.method !== 'GET') return sendJson(response, 405, { error: 'Method not allowed' });
		void sendMp4(response, mp4);
	});
}

/** The multipart part `content` of a files-API upload: its file name, type and bytes. */
export function contentPart(call: RecordedCall): { filename: string; type: string; bytes: Buffer } | undefined {
	const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(String(call.headers['content-type'] ?? ''));
	if (!boundary) return undefined;
	const marker = `--${boundary[1] ?? boundary[2]}`;
	const text = call.body.toString('latin1');
	for (const part of text.split(marker)) {
		const head = /^\r\n([\s\S]*?)\r\n\r\n/.exec(part);
		if (!head || !/name="content"/.test(head[1]!)) continue;
		const start = head[0].length;
		const bytes = Buffer.from(part.slice(start, part.length - 2), 'latin1');
		return { filename: /filename="([^"]*)"/.exec(head[1]!)?.[1] ?? '', type: /content-type: ([^\r\n]+)/i.exec(head[1]!)?.[1] ?? '', bytes };
	}
	return undefined;
}
