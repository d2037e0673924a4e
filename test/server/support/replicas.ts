/**
 * A fleet of replicas for the scale-out suites: N copies of the built CLI with the same API key,
 * one PostgreSQL database and either one s3rver bucket or one shared data dir, as a deployment
 * behind a load balancer runs them. Each test file starts its own PostgreSQL and s3rver.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import { startServer, type RunningServer } from '../../helpers/server';
import { makeMp4 } from './media';
import { startTestPostgres, type TestPostgres } from './postgres';
import { startS3rver, type S3TestServer } from './s3';

export interface Fleet {
	replicas: RunningServer[];
	databaseUrl: string;
	/** Null with `storage: 'disk'`. */
	s3: S3TestServer | null;
	/** The data dir every disk replica shares (each s3 replica has its own, unused for files). */
	sharedDataDir: string;
	/** Starts one more replica with the fleet's settings (plus `extraArgs` and `env`). */
	startReplica(extraArgs?: string[], env?: Record<string, string>): Promise<RunningServer>;
	/** Stops every replica (SIGTERM) and starts as many again with the same settings. */
	restartAll(): Promise<void>;
	/** Runs one query on the fleet's database. */
	query<T = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<T[]>;
	stop(): Promise<void>;
}

export interface FleetOptions {
	count?: number;
	storage?: 's3' | 'disk';
	/** Flags every replica gets, e.g. --retention-seconds. */
	args?: string[];
}

export interface FleetInfrastructure {
	postgres: TestPostgres;
	s3: S3TestServer;
	stop(): Promise<void>;
}

/** One PostgreSQL cluster and one s3rver for a test file. */
export async function startInfrastructure(): Promise<FleetInfrastructure> {
	const [postgres, s3] = await Promise.all([startTestPostgres(), startS3rver()]);
	return { postgres, s3, stop: async () => void (await Promise.all([postgres.stop(), s3.stop()])) };
}

export async function startFleet(infrastructure: FleetInfrastructure, options: FleetOptions = {}): Promise<Fleet> {
	const storage = options.storage ?? 's3';
	const databaseUrl = await infrastructure.postgres.createDatabase();
	const s3 = storage === 's3' ? infrastructure.s3 : null;
	const sharedDataDir = mkdtempSync(join(tmpdir(), 'imagegen-fleet-'));
	const ownDataDirs: string[] = [];
	const fleetArgs = ['--database-url', databaseUrl, ...(options.args ?? [])];
	if (s3) fleetArgs.push('--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style');
	const startReplica = (extraArgs: string[] = [], env?: Record<string, string>) => {
		let dataDir = sharedDataDir;
		if (s3) {
			dataDir = mkdtempSync(join(tmpdir(), 'imagegen-replica-'));
			ownDataDirs.push(dataDir);
		}
		return startServer({ dataDir, args: [...fleetArgs, ...extraArgs], env });
	};
	const count = options.count ?? 3;
	const fleet: Fleet = {
		replicas: await Promise.all(Array.from({ length: count }, () => startReplica())),
		databaseUrl,
		s3,
		sharedDataDir,
		startReplica,
		async restartAll() {
			await Promise.all(fleet.replicas.map((replica) => replica.stop()));
			fleet.replicas = await Promise.all(fleet.replicas.map(() => startReplica()));
		},
		async query<T>(sql: string, values: unknown[] = []) {
			const client = new Client({ connectionString: databaseUrl });
			await client.connect();
			try {
				return (await client.query(sql, values)).rows as T[];
			} finally {
				await client.end();
			}
		},
		async stop() {
			await Promise.all(fleet.replicas.map((replica) => replica.stop({ signal: 'SIGKILL' })));
			for (const directory of [sharedDataDir, ...ownDataDirs]) rmSync(directory, { recursive: true, force: true });
		},
	};
	return fleet;
}

/** The environment of a replica whose clock is off by `skewMs`, as a machine whose clock drifted. */
export function skewedClock(skewMs: number): Record<string, string> {
	return { NODE_OPTIONS: `--require ${join(__dirname, 'skewed-clock.cjs')}`, IMAGEGEN_TEST_CLOCK_SKEW_MS: String(skewMs) };
}

/** The URL of a hosted file as served by another replica (file URLs carry the issuing replica's origin). */
export function onReplica(fileUrl: string, replica: RunningServer): string {
	const url = new URL(fileUrl);
	return `${replica.origin}${url.pathname}`;
}

export interface StreamedUpload {
	/** The server's answer; rejects if the connection breaks first. */
	answer: Promise<{ status: number; body: any }>;
	/** Bytes of the file handed to the socket so far. */
	sent(): number;
}

/**
 * A multipart POST /v1/uploads whose file part is an MP4 of `totalBytes` sent in `chunkBytes`
 * pieces with `pauseMs` between them: an upload that is still running when a replica is stopped.
 */
export function streamUpload(replica: RunningServer, options: { totalBytes: number; chunkBytes?: number; pauseMs?: number }): StreamedUpload {
	const chunkBytes = options.chunkBytes ?? 256 * 1024;
	const boundary = `----replica-test-${Date.now()}`;
	const head = Buffer.from(
		`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
	);
	const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
	const mp4Header = makeMp4(0);
	let sent = 0;
	async function* body() {
		yield head;
		yield mp4Header;
		sent += mp4Header.length;
		const filler = Buffer.alloc(chunkBytes, 0x61);
		while (sent < options.totalBytes) {
			const piece = filler.subarray(0, Math.min(chunkBytes, options.totalBytes - sent));
			yield piece;
			sent += piece.length;
			if (options.pauseMs) await delay(options.pauseMs);
		}
		yield tail;
	}
	const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
		const request = httpRequest(`${replica.origin}/v1/uploads`, {
			method: 'POST',
			headers: { authorization: `Bearer ${replica.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
		});
		request.once('error', reject);
		request.once('response', (response) => {
			let text = '';
			response.setEncoding('utf8');
			response.on('data', (chunk: string) => (text += chunk));
			response.once('error', reject);
			response.once('end', () => resolve({ status: response.statusCode ?? 0, body: text.startsWith('{') ? JSON.parse(text) : text }));
		});
		pipeline(Readable.from(body()), request).catch(reject);
	});
	return { answer, sent: () => sent };
}
