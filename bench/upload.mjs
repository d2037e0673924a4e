// Upload: a large video streamed to POST /v1/uploads vs the bare pipe-to-disk server, same
// machine, same run, same client; and the service's peak memory at 100 MiB and at 1 GiB.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, peakRssMb, round, startImagegenServer, startProcess } from './lib.mjs';

const MIB = 1024 * 1024;

/** An MP4 (a real `ftyp` box, so the service sniffs a video) padded with a repeating pattern. */
async function makeVideo(path, bytes) {
	const out = createWriteStream(path);
	const size = Buffer.alloc(4);
	size.writeUInt32BE(24);
	const ftyp = Buffer.concat([size, Buffer.from('ftypisom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2', 'latin1')]);
	const chunk = Buffer.alloc(MIB, 0).map((_, i) => (i * 31 + 7) & 0xff);
	out.write(ftyp);
	for (let written = ftyp.length; written < bytes; written += chunk.length) {
		if (!out.write(chunk.subarray(0, Math.min(chunk.length, bytes - written)))) await once(out, 'drain');
	}
	out.end();
	await once(out, 'close');
}

/** Streams the file as a multipart form with part `file`; answers seconds taken. */
function uploadMultipart(origin, path, file) {
	const boundary = 'bench-boundary-7d3f';
	const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
	const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
	const size = statSync(file).size;
	return new Promise((resolve, reject) => {
		const started = process.hrtime.bigint();
		const request = http.request(`${origin}${path}`, {
			method: 'POST',
			headers: { authorization: `Bearer ${API_KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + size + tail.length },
		});
		request.on('response', (response) => {
			let body = '';
			response.on('data', (chunk) => (body += chunk));
			response.on('end', () => {
				if (response.statusCode !== 200) return reject(new Error(`upload answered ${response.statusCode}: ${body}`));
				resolve(Number(process.hrtime.bigint() - started) / 1e9);
			});
		});
		request.on('error', reject);
		request.write(head);
		const source = createReadStream(file, { highWaterMark: MIB });
		source.pipe(request, { end: false });
		source.on('end', () => request.end(tail));
	});
}

export async function uploadBench({ sizesMb = [100, 1024], repeats = 3 } = {}) {
	const work = mkdtempSync(join(tmpdir(), 'imagegen-bench-upload-'));
	const results = [];
	try {
		for (const sizeMb of sizesMb) {
			const file = join(work, `video-${sizeMb}.mp4`);
			await makeVideo(file, sizeMb * MIB);
			const bareDir = mkdtempSync(join(work, 'bare-'));
			const bare = await startProcess(join(ROOT, 'bench', 'bare-upload-server.mjs'), [bareDir]);
			const oursDir = mkdtempSync(join(work, 'ours-'));
			const ours = await startImagegenServer(oursDir, ['--max-upload-mb', String(sizeMb + 64)]);
			const times = { bare: [], ours: [] };
			// Each upload starts with no dirty pages left by the one before, so neither side pays for
			// the other's disk writeback.
			const settled = () => execFileSync('sync');
			for (let i = 0; i < repeats; i++) {
				settled();
				times.bare.push(await uploadMultipart(bare.origin, '/upload', file));
				settled();
				times.ours.push(await uploadMultipart(ours.origin, '/v1/uploads', file));
			}
			// The machine is shared and its speed drifts between runs: each ours/bare pair runs back to
			// back, and the median of the pair ratios is the figure.
			const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
			const bareMbps = median(times.bare.map((seconds) => sizeMb / seconds));
			const oursMbps = median(times.ours.map((seconds) => sizeMb / seconds));
			const ratio = median(times.ours.map((seconds, i) => times.bare[i] / seconds));
			results.push({
				sizeMb,
				bareMiBps: round(bareMbps, 1),
				oursMiBps: round(oursMbps, 1),
				ratio: round(ratio),
				serverPeakRssMb: round(peakRssMb(ours.pid), 1),
				barePeakRssMb: round(peakRssMb(bare.pid), 1),
			});
			await Promise.all([bare.stop(), ours.stop()]);
			rmSync(file, { force: true });
			rmSync(bareDir, { recursive: true, force: true });
			rmSync(oursDir, { recursive: true, force: true });
		}
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
	return results;
}
