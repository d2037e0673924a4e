/**
 * p-video in a real n8n: the package installed from its npm pack tarball, the two video examples
 * imported as the README offers them and run with `n8n execute` against the real service (its
 * sandbox renders real H.264 with ffmpeg). A last HTTP Request node, added after each example's
 * video node, posts the video binary n8n holds to a receiver on loopback, where ffprobe reads it:
 * what reaches the next node of a workflow is a playable MP4 of the size and length asked for.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';

import { probeVideo, type ProbedVideo } from '../helpers/ffprobe';
import { INSTALL_TIMEOUT_MS, openSession, outputOf, readExample, type ExecutionRun, type Session, type WorkflowJson } from './support/n8n';

const FROM_PROMPT_ID = 'imageGenVideoEx01';
const FIRST_FRAME_ID = 'imageGenVideoEx02';

interface Posted {
	path: string;
	contentType: string;
	bytes: Buffer;
}

/** A loopback receiver that keeps every body posted to it, by path. */
async function startReceiver(): Promise<{ origin: string; posted: Posted[]; close(): Promise<void> }> {
	const posted: Posted[] = [];
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			posted.push({ path: request.url ?? '', contentType: String(request.headers['content-type'] ?? ''), bytes: Buffer.concat(chunks) });
			response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		posted,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** The example as the README offers it, plus a node after `videoNode` that posts its binary `field` to `url`. */
function withReport(file: string, id: string, videoNode: string, field: string, url: string): WorkflowJson {
	const example = readExample(file);
	const source = example.nodes.find((node) => node.name === videoNode)!;
	const report = {
		id: randomUUID(),
		name: 'Post the video',
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		position: [((source.position as number[])[0] ?? 0) + 220, 0],
		parameters: { method: 'POST', url, sendBody: true, contentType: 'binaryData', inputDataFieldName: field, options: {} },
	};
	const connections = { ...example.connections, [videoNode]: { main: [[{ node: report.name, type: 'main', index: 0 }]] } };
	return { ...example, id, nodes: [...example.nodes, report], connections };
}

let session: Session;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const runs: Record<string, { run: ExecutionRun; raw: string }> = {};
const probeDir = mkdtempSync(join(tmpdir(), 'imagegen-e2e-video-'));

async function probePosted(path: string): Promise<{ posted: Posted; probed: ProbedVideo }> {
	const posted = receiver.posted.find((entry) => entry.path === path);
	if (!posted) throw new Error(`nothing was posted to ${path}; posted: ${receiver.posted.map((entry) => entry.path).join(', ') || 'nothing'}`);
	const file = join(probeDir, `${path.slice(1)}.mp4`);
	writeFileSync(file, posted.bytes);
	return { posted, probed: await probeVideo(file) };
}

beforeAll(async () => {
	session = await openSession('video');
	receiver = await startReceiver();
	await session.importWorkflows([
		withReport('imagegen-video-from-prompt.json', FROM_PROMPT_ID, 'Make the video', 'data', `${receiver.origin}/from-prompt`),
		withReport('imagegen-video-first-frame.json', FIRST_FRAME_ID, 'Animate it', 'video', `${receiver.origin}/first-frame`),
	]);
	for (const id of [FROM_PROMPT_ID, FIRST_FRAME_ID]) {
		const { run, result } = await session.execute(id);
		runs[id] = { run, raw: result.stdout + result.stderr };
	}
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await receiver?.close();
	await session?.close();
	rmSync(probeDir, { recursive: true, force: true });
});

test('examples/imagegen-video-from-prompt.json: a 5-second 1280x720 H.264 MP4 reaches the next node', async () => {
	const { run, raw } = runs[FROM_PROMPT_ID]!;
	expect(run.status).toBe('success');
	const [item] = outputOf(run, 'Make the video', raw);
	expect(item!.json).toMatchObject({ model: 'p-video', status: 'completed', seconds: '5', size: '1280x720', id: expect.stringMatching(/^video_/) });
	expect(String(item!.json.url).startsWith(session.server.origin)).toBe(true);
	expect(item!.json.usage).toEqual({ seconds: 5, cost_usd: expect.any(Number) });
	expect(item!.binary?.data).toMatchObject({ mimeType: 'video/mp4', fileExtension: 'mp4' });

	const { posted, probed } = await probePosted('/from-prompt');
	expect(posted.contentType).toMatch(/^video\/mp4/);
	expect(posted.bytes.length).toBe(item!.json.sizeBytes);
	expect(probed).toMatchObject({ codec: 'h264', width: 1280, height: 720, fps: 24 });
	expect(probed.durationSeconds).toBeCloseTo(5, 1);
	const hosted = await fetch(String(item!.json.url));
	expect(Buffer.from(await hosted.arrayBuffer()).equals(posted.bytes)).toBe(true);
});

test('examples/imagegen-video-first-frame.json: p-image\'s 9:16 still, animated by p-video in its shape', async () => {
	const { run, raw } = runs[FIRST_FRAME_ID]!;
	expect(run.status).toBe('success');
	const [still] = outputOf(run, 'Make the first frame', raw);
	expect(still!.binary?.data?.mimeType).toBe('image/png');
	const [item] = outputOf(run, 'Animate it', raw);
	expect(item!.json).toMatchObject({ model: 'p-video', status: 'completed', size: '720x1280' });
	expect(item!.binary?.video?.mimeType).toBe('video/mp4');

	const { probed } = await probePosted('/first-frame');
	expect(probed).toMatchObject({ codec: 'h264', width: 720, height: 1280, fps: 24 });
	expect(probed.durationSeconds).toBeCloseTo(5, 1);
});
