// S3 driver upload: a generated 100 MiB and 1 GiB stream written through S3ObjectStorage.write vs a
// bare lib-storage Upload of the same stream (same part size and queue) to the same s3rver, each
// upload in a fresh child process whose own peak RSS is reported. Driver-level: the bytes do not go
// through the HTTP service here. Runs on its own (`node bench/s3-upload.mjs`, after `npm run build`)
// or from bench/run.mjs (`--only s3`).
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROOT, flatPeakRows, round, startProcess } from './lib.mjs';

const MIB = 1024 * 1024;
const BUCKET = 'bench';
// s3rver's built-in account, found by the SDK's default chain like any deployment's credentials.
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

async function uploadInChild(mode, endpoint, key, bytes) {
	const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'bench', 's3-upload-child.mjs'), mode, endpoint, BUCKET, key, String(bytes)], {
		env: { ...process.env, ...CREDENTIALS },
		maxBuffer: MIB,
	});
	return JSON.parse(stdout.trim().split('\n').pop());
}

async function deleteObject(endpoint, key) {
	// s3rver takes unsigned requests; removing each object keeps the disk from filling up.
	const response = await fetch(`${endpoint}/${BUCKET}/${key}`, { method: 'DELETE' });
	if (response.status !== 204) throw new Error(`deleting ${key} answered ${response.status}`);
}

export async function s3UploadBench({ sizesMb = [100, 1024], repeats = 3 } = {}) {
	const work = mkdtempSync(join(tmpdir(), 'imagegen-bench-s3-'));
	const s3rver = await startProcess(join(ROOT, 'bench', 's3rver-server.mjs'), [work, BUCKET]);
	const results = [];
	try {
		for (const sizeMb of sizesMb) {
			const bytes = sizeMb * MIB;
			const rounds = [];
			for (let i = 0; i < repeats; i++) {
				// Alternating which side goes first, so neither always meets a warmer (or busier) s3rver.
				const order = i % 2 === 0 ? ['bare', 'driver'] : ['driver', 'bare'];
				const round_ = {};
				for (const mode of order) {
					const key = `${mode}-${sizeMb}-${i}.mp4`;
					// s3rver writes every byte to disk twice (parts, then the object): each upload starts
					// with no dirty pages left by the one before, so neither pays for the other's writeback.
					execFileSync('sync');
					round_[mode] = await uploadInChild(mode, s3rver.origin, key, bytes);
					await deleteObject(s3rver.origin, key);
				}
				rounds.push(round_);
			}
			// The machine is shared and its speed drifts: the figure is the median of per-round ratios.
			const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
			const mibps = (upload) => sizeMb / upload.seconds;
			results.push({
				sizeMb,
				driverMiBps: round(median(rounds.map((r) => mibps(r.driver))), 1),
				bareMiBps: round(median(rounds.map((r) => mibps(r.bare))), 1),
				ratio: round(median(rounds.map((r) => mibps(r.driver) / mibps(r.bare)))),
				driverPeakRssMb: round(Math.max(...rounds.map((r) => r.driver.peakRssMb)), 1),
				barePeakRssMb: round(Math.max(...rounds.map((r) => r.bare.peakRssMb)), 1),
				// CPU time of each uploading process: less sensitive than wall time to a busy machine.
				driverCpuSeconds: round(median(rounds.map((r) => r.driver.cpuSeconds))),
				bareCpuSeconds: round(median(rounds.map((r) => r.bare.cpuSeconds))),
				rounds: rounds.map((r) => ({
					driverSeconds: round(r.driver.seconds),
					bareSeconds: round(r.bare.seconds),
					driverCpuSeconds: round(r.driver.cpuSeconds),
					bareCpuSeconds: round(r.bare.cpuSeconds),
					driverPeakRssMb: round(r.driver.peakRssMb, 1),
					barePeakRssMb: round(r.bare.peakRssMb, 1),
				})),
			});
		}
	} finally {
		await s3rver.stop();
		rmSync(work, { recursive: true, force: true });
	}
	return results;
}

/** Rows for bench/run.mjs's table. */
export function s3UploadRows(results) {
	const rows = [];
	for (const r of results) {
		rows.push([`s3 driver write ${r.sizeMb} MiB throughput`, `${r.driverMiBps} MiB/s`, `${r.bareMiBps} MiB/s (bare Upload)`, r.ratio, '≥ 0.8', r.ratio >= 0.8 ? 'yes' : 'NO']);
		rows.push([`s3 driver write ${r.sizeMb} MiB CPU time`, `${r.driverCpuSeconds} s`, `${r.bareCpuSeconds} s`, round(r.driverCpuSeconds / r.bareCpuSeconds), '', '']);
		rows.push([`s3 driver write ${r.sizeMb} MiB peak RSS`, `${r.driverPeakRssMb} MB`, `${r.barePeakRssMb} MB`, '', '< 150 MB', r.driverPeakRssMb < 150 ? 'yes' : 'NO']);
	}
	return [...rows, ...flatPeakRows('s3 driver', results, 'driverPeakRssMb')];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
	const results = await s3UploadBench();
	process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
	const { table } = await import('./lib.mjs');
	process.stdout.write(`\n${table([['benchmark', 'measured', 'baseline', 'ratio', 'target', 'met'], ...s3UploadRows(results)])}\n`);
}
