// Upload: a large video streamed to POST /v1/uploads vs the bare pipe-to-disk server, same
// machine, same run, same client; and the service's peak memory at 100 MiB and at 1 GiB.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, peakRssMb, postMultipartFile, round, startImagegenServer, startProcess } from './lib.mjs';

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
				times.bare.push(await postMultipartFile(`${bare.origin}/upload`, createReadStream(file, { highWaterMark: MIB }), statSync(file).size));
				settled();
				times.ours.push(await postMultipartFile(`${ours.origin}/v1/uploads`, createReadStream(file, { highWaterMark: MIB }), statSync(file).size));
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
