// One s3rver (an S3-protocol server) on 127.0.0.1 with one bucket, in its own process so that the
// benchmark's client never shares an event loop with it. Args: <directory> <bucket>.
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`s3rver listening on http://127.0.0.1:${port}\n`);
process.on('SIGTERM', () => server.close().finally(() => process.exit(0)));
