/**
 * V8's young generation holds no memory the service does not need (server/src/runtime/young-generation.ts):
 * start-up leaves it at its starting size, and the chunks of a streamed request body are freed while
 * the upload runs instead of piling up until V8 next needs a collection, and inline answers of
 * several MB do not let Node 24 grow it past Node 20's largest size. Measured on the built
 * service by a probe preloaded into it (support/memory-peaks.cjs).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { YOUNG_GENERATION_CAP_BYTES } from '../../../server/src/runtime/young-generation';
import { SERVER_CLI, startServer } from '../../helpers/server';
import { startCountingUpstream } from '../support/counting-upstream';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { streamUpload } from '../support/replicas';
import { S3RVER_CREDENTIALS, startS3rver, type S3TestServer } from '../support/s3';

jest.setTimeout(120_000);

const MIB = 1024 * 1024;

let workDir: string;
beforeEach(() => (workDir = mkdtempSync(join(tmpdir(), 'imagegen-young-'))));
afterEach(() => rmSync(workDir, { recursive: true, force: true }));

interface MemoryReport {
	arrayBuffers: number;
	newSpacePeak: number;
	newSpaceAtExit: number;
}

/** Starts the built service with the probe (and `nodeOptions`), runs `work`, stops it and answers what the probe saw. */
async function measured(
	args: string[],
	work: (server: Awaited<ReturnType<typeof startServer>>) => Promise<void>,
	nodeOptions = '',
	extraEnv: Record<string, string> = {},
): Promise<MemoryReport> {
	const report = join(workDir, 'memory.json');
	const server = await startServer({
		args,
		env: {
			NODE_OPTIONS: `${nodeOptions} --require ${join(__dirname, '..', 'support', 'memory-peaks.cjs')}`.trim(),
			IMAGEGEN_TEST_MEMORY_REPORT: report,
			...S3RVER_CREDENTIALS,
			AWS_REGION: 'us-east-1',
			...extraEnv,
		},
	});
	try {
		await work(server);
	} finally {
		await server.stop({ removeData: true });
	}
	return JSON.parse(readFileSync(report, 'utf8')) as MemoryReport;
}

/** Noise does not compress: about 0.7 MB of PNG, which the service answers as a 1024 px PNG in base64 (≈ 4 MB). */
function noisyPicture(): Promise<Buffer> {
	const side = 480;
	return sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
}

describe('start-up with the S3 and PostgreSQL engines', () => {
	let s3: S3TestServer;
	let postgres: TestPostgres;
	beforeAll(async () => {
		[s3, postgres] = await Promise.all([startS3rver('imagegen-young'), startTestPostgres()]);
	});
	afterAll(async () => {
		await Promise.all([s3?.stop(), postgres?.stop()]);
	});
	const engines = async () => ['--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style', '--database-url', await postgres.createDatabase()];

	it('leaves the young generation at its starting size', async () => {
		const { newSpaceAtExit } = await measured(await engines(), async () => undefined);
		expect(newSpaceAtExit).toBeLessThanOrEqual(4 * MIB);
	});

	it("is left to an operator who sized the young generation: the same start grows it", async () => {
		const { newSpaceAtExit } = await measured(await engines(), async () => undefined, '--max-semi-space-size=16');
		expect(newSpaceAtExit).toBeGreaterThan(8 * MIB);
	});
});

it('inline answers of a MB each leave the young generation at most as large as Node 20 lets it grow (two 16 MiB semi-spaces)', async () => {
	const upstream = await startCountingUpstream(0, { picture: await noisyPicture() });
	try {
		const { args, env } = upstream.serverOptions();
		const { newSpacePeak } = await measured([...args, '--rate-limit-per-minute', '0'], async (server) => {
			for (let index = 0; index < 40; index += 1) {
				const response = await fetch(`${server.baseUrl}/images/generations`, {
					method: 'POST',
					headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `young-${index}` },
					body: JSON.stringify({ model: 'p-image', prompt: `a harbour, take ${index}`, response_format: 'b64_json' }),
				});
				expect(response.status).toBe(200);
				await response.arrayBuffer();
			}
		}, '', env);
		// Node 24's V8 grows it to 128 MiB under this traffic and keeps it; one doubling past the
		// cap may happen before the collector's report arrives.
		expect(newSpacePeak).toBeLessThanOrEqual(2 * YOUNG_GENERATION_CAP_BYTES);
	} finally {
		await upstream.close();
	}
});

it('a 96 MiB upload holds at most a few MiB of body chunks at any time', async () => {
	const peaks = await measured(['--max-upload-mb', '128'], async (server) => {
		const { status } = await streamUpload(server, { totalBytes: 96 * MIB, chunkBytes: 64 * 1024 }).answer;
		expect(status).toBe(200);
	});
	// Left to V8 alone, the dead chunks of this upload reached 30–50 MiB.
	expect(peaks.arrayBuffers).toBeLessThan(16 * MIB);
});

/**
 * Run in a fresh process: a Jest worker's heap carries every earlier suite, and V8 answers a
 * minor-collection request with a full one when its old generation is near its limit.
 */
it('runs a minor collection every COLLECT_EVERY_BYTES streamed, without a start-up flag and without exposing gc', () => {
	const script = `
		const { PerformanceObserver, constants } = require('node:perf_hooks');
		const { COLLECT_EVERY_BYTES, streamedBytes } = require(${JSON.stringify(join(SERVER_CLI, '..', 'runtime', 'young-generation.js'))});
		const kinds = [];
		new PerformanceObserver((list) => { for (const entry of list.getEntries()) kinds.push(entry.detail.kind); }).observe({ entryTypes: ['gc'] });
		streamedBytes(COLLECT_EVERY_BYTES - 1);
		setTimeout(() => {
			const before = kinds.length;
			// Three more thresholds' worth, in body-sized pieces: three collections.
			for (let sent = 0; sent < 3 * COLLECT_EVERY_BYTES; sent += 64 * 1024) streamedBytes(64 * 1024);
			const started = Date.now();
			const report = () => {
				const after = kinds.slice(before);
				if (after.length < 3 && Date.now() - started < 5000) return setTimeout(report, 20);
				process.stdout.write(JSON.stringify({ after, minor: constants.NODE_PERFORMANCE_GC_MINOR, gcExposed: typeof globalThis.gc !== 'undefined' }));
			};
			report();
		}, 50);
	`;
	const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
	expect(result.stderr).toBe('');
	const { after, minor, gcExposed } = JSON.parse(result.stdout) as { after: number[]; minor: number; gcExposed: boolean };
	expect(after.filter((kind) => kind === minor).length).toBeGreaterThanOrEqual(3);
	expect(gcExposed).toBe(false);
});
