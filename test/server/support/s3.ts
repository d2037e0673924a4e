/**
 * A real S3-protocol server for the tests: s3rver on 127.0.0.1 with a free port, its objects in a
 * temp directory, one bucket. The driver talks to it with the real AWS SDK, path-style, with
 * s3rver's own access key given the way a deployment gives credentials: the SDK's default chain
 * (the environment).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { S3ObjectStorage, type S3ObjectStorageOptions } from '../../../server/src/storage/s3-object-storage';

/** s3rver's built-in account. */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } as const;

export interface S3TestServer {
	endpoint: string;
	bucket: string;
	/** Options for a driver on this server's bucket. */
	options(overrides?: Partial<S3ObjectStorageOptions>): S3ObjectStorageOptions;
	storage(overrides?: Partial<S3ObjectStorageOptions>): S3ObjectStorage;
	/** Stops the server (an outage: its port refuses connections); the objects stay. */
	halt(): Promise<void>;
	/** Serves the same objects again on the same port. */
	resume(): Promise<void>;
	stop(): Promise<void>;
}

export async function startS3rver(bucket = 'imagegen-test'): Promise<S3TestServer> {
	const restoreEnvironment = setEnvironment({ ...S3RVER_CREDENTIALS, AWS_REGION: 'us-east-1' });
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-s3rver-'));
	const serve = (port: number) => new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: bucket }] });
	let server: S3rver | null = serve(0);
	const { port } = await server.run();
	const endpoint = `http://127.0.0.1:${port}`;
	const options = (overrides: Partial<S3ObjectStorageOptions> = {}): S3ObjectStorageOptions => ({
		bucket,
		endpoint,
		region: 'us-east-1',
		forcePathStyle: true,
		prefix: '',
		...overrides,
	});
	return {
		endpoint,
		bucket,
		options,
		storage: (overrides) => new S3ObjectStorage(options(overrides)),
		async halt() {
			await server?.close();
			server = null;
		},
		async resume() {
			if (server) return;
			server = serve(port);
			await server.run();
		},
		async stop() {
			await server?.close();
			rmSync(directory, { recursive: true, force: true });
			restoreEnvironment();
		},
	};
}

/** Sets environment variables; answers a function that puts the previous values back. */
export function setEnvironment(values: Record<string, string | undefined>): () => void {
	const previous = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
	const apply = (entries: Record<string, string | undefined>) => {
		for (const [name, value] of Object.entries(entries)) {
			if (value === undefined) delete process.env[name];
			else process.env[name] = value;
		}
	};
	apply(values);
	return () => apply(previous);
}
