// One upload to an S3 server in a fresh process, so its peak RSS is its own: either through
// S3ObjectStorage.write (`driver`) or through a bare lib-storage Upload (`bare`) with the same part
// size and queue. The body is generated on the fly (nothing read from disk), the same for both.
// Args: driver|bare <endpoint> <bucket> <key> <bytes>. Prints one JSON line.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ROOT } from './lib.mjs';

const [mode, endpoint, bucket, key, bytesArgument] = process.argv.slice(2);
const bytes = Number(bytesArgument);
// The server's own dependencies and build: the versions the service runs.
const serverRequire = createRequire(join(ROOT, 'server', 'package.json'));
const { S3ObjectStorage, PART_SIZE, QUEUE_SIZE } = serverRequire('./dist/server/src/storage/s3-object-storage.js');

// The chunk size a request body arrives in from a socket.
const CHUNK = 64 * 1024;
function generated(total) {
	const pattern = Buffer.alloc(CHUNK).map((_, i) => (i * 131 + 17) & 0xff);
	let sent = 0;
	return new Readable({
		highWaterMark: CHUNK,
		read() {
			if (sent >= total) return this.push(null);
			const size = Math.min(CHUNK, total - sent);
			sent += size;
			// A fresh buffer per chunk, as a network socket hands them out.
			this.push(Buffer.from(pattern.subarray(0, size)));
		},
	});
}

const options = { bucket, endpoint, region: 'us-east-1', forcePathStyle: true, prefix: '' };
const started = process.hrtime.bigint();
let stored;
if (mode === 'driver') {
	const storage = new S3ObjectStorage(options);
	stored = await storage.write(key, generated(bytes), { contentType: 'video/mp4' });
	await storage.close();
} else {
	const { S3Client } = serverRequire('@aws-sdk/client-s3');
	const { Upload } = serverRequire('@aws-sdk/lib-storage');
	const client = new S3Client({ region: options.region, endpoint, forcePathStyle: true });
	const upload = new Upload({ client, params: { Bucket: bucket, Key: key, Body: generated(bytes), ContentType: 'video/mp4' }, partSize: PART_SIZE, queueSize: QUEUE_SIZE });
	await upload.done();
	client.destroy();
	stored = bytes;
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
if (stored !== bytes) throw new Error(`stored ${stored} bytes of ${bytes}`);
const usage = process.resourceUsage();
// maxRSS is in kibibytes, CPU times in microseconds.
process.stdout.write(`${JSON.stringify({ mode, bytes, seconds, peakRssMb: usage.maxRSS / 1024, cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })}\n`);
