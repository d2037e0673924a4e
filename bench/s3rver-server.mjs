// s3rver (an S3-protocol server) on 127.0.0.1 for the S3 benchmark, in a process of its own so that
// its work and memory are not counted against the uploader. Args: <directory> <bucket>.
import { createRequire } from 'node:module';

const S3rver = createRequire(import.meta.url)('s3rver');
const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
