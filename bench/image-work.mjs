// Hosted-file reads while images are being processed: the p99 of reading a 64 px hosted file while
// 4 heavy fits (noise, output_format=webp, max_bytes=20000) and 4 image bombs (a PNG declaring
// 16000 × 16000 px) arrive at once and again, against the same reads on the idle server, measured
// in the same run. Done twice: with the service's own thread pool (8 threads, cli.ts) and with
// Node's default of 4, where the image queue's 2 pipelines are all that keep reads moving.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { API_KEY, percentile, round, startImagegenServer } from './lib.mjs';

/** A valid greyscale PNG of width × height black pixels: ~250 KB for 16000 × 16000. */
function pngBomb(width, height) {
	const chunk = (type, data) => {
		const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
		const length = Buffer.alloc(4);
		length.writeUInt32BE(data.length);
		const crc = Buffer.alloc(4);
		crc.writeUInt32BE(crc32(typed));
		return Buffer.concat([length, typed, crc]);
	};
	const header = Buffer.alloc(13);
	header.writeUInt32BE(width, 0);
	header.writeUInt32BE(height, 4);
	header.set([8, 0, 0, 0, 0], 8);
	// Compressed in slices of rows, so the bench never holds the decoded size at once.
	const rows = Buffer.alloc((width + 1) * 500);
	const parts = [];
	for (let y = 0; y < height; y += 500) parts.push(rows);
	const idat = deflateSync(Buffer.concat(parts), { level: 9 });
	return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

async function upload(origin, bytes, fields = {}) {
	const form = new FormData();
	for (const [name, value] of Object.entries(fields)) form.append(name, value);
	form.append('file', new Blob([bytes]), 'image');
	const response = await fetch(`${origin}/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}` }, body: form });
	return { status: response.status, body: await response.json() };
}

async function timedRead(url) {
	const started = performance.now();
	const response = await fetch(url);
	await response.arrayBuffer();
	if (response.status !== 200) throw new Error(`read answered ${response.status}`);
	return performance.now() - started;
}

const summary = (times) => {
	const sorted = [...times].sort((a, b) => a - b);
	return { reads: sorted.length, p50Ms: round(percentile(sorted, 50), 1), p99Ms: round(percentile(sorted, 99), 1), maxMs: round(sorted.at(-1), 1) };
};

async function measure({ label, env, heavy, bomb, rounds }) {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-bench-image-work-'));
	const server = await startImagegenServer(dataDir, [], env);
	try {
		const small = await upload(server.origin, await sharp({ create: { width: 64, height: 64, channels: 3, background: '#c04020' } }).png().toBuffer());
		const url = small.body.imageUrl;
		const idle = [];
		for (let i = 0; i < 200; i++) idle.push(await timedRead(url));

		const statuses = {};
		let working = true;
		const started = performance.now();
		const load = (async () => {
			for (let round = 0; round < rounds; round++) {
				const answers = await Promise.all([
					...Array.from({ length: 4 }, () => upload(server.origin, heavy, { output_format: 'webp', max_bytes: '20000' })),
					...Array.from({ length: 4 }, () => upload(server.origin, bomb, { output_format: 'webp', max_bytes: '10240' })),
				]);
				for (const answer of answers) {
					const key = answer.status === 200 ? '200' : `${answer.status} ${answer.body.error.code}`;
					statuses[key] = (statuses[key] ?? 0) + 1;
				}
			}
		})().finally(() => (working = false));
		const busy = [];
		while (working) {
			busy.push(await timedRead(url));
			await new Promise((resolve) => setTimeout(resolve, 10));
		}
		await load;
		const idleSummary = summary(idle);
		const busySummary = summary(busy);
		return {
			label,
			idle: idleSummary,
			busy: busySummary,
			ratio: round(busySummary.p99Ms / idleSummary.p99Ms, 1),
			loadSeconds: round((performance.now() - started) / 1000, 1),
			answers: statuses,
		};
	} finally {
		await server.stop();
		rmSync(dataDir, { recursive: true, force: true });
	}
}

export async function imageWorkBench({ rounds = 2 } = {}) {
	const heavy = await sharp({ create: { width: 2400, height: 1600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
		.png({ compressionLevel: 1 })
		.toBuffer();
	const bomb = pngBomb(16_000, 16_000);
	return [
		await measure({ label: 'thread pool 8 (the service default)', env: {}, heavy, bomb, rounds }),
		await measure({ label: 'thread pool 4 (UV_THREADPOOL_SIZE=4)', env: { UV_THREADPOOL_SIZE: '4' }, heavy, bomb, rounds }),
	];
}

if (import.meta.url === `file://${process.argv[1]}`) {
	process.stdout.write(`${JSON.stringify(await imageWorkBench(), null, 2)}\n`);
}
