/**
 * A fleet of replicas for the scale-out suites: N copies of the built CLI with the same API key,
 * one PostgreSQL database and either one s3rver bucket or one shared data dir, as a deployment
 * behind a load balancer runs them. Each test file starts its own PostgreSQL and s3rver.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startServer, type RunningServer } from '../../helpers/server';
import { startTestPostgres, type TestPostgres } from './postgres';
import { startS3rver, type S3TestServer } from './s3';

export interface Fleet {
	replicas: RunningServer[];
	databaseUrl: string;
	/** Null with `storage: 'disk'`. */
	s3: S3TestServer | null;
	/** The data dir every disk replica shares (each s3 replica has its own, unused for files). */
	sharedDataDir: string;
	/** Starts one more replica with the fleet's settings (plus `extraArgs`). */
	startReplica(extraArgs?: string[]): Promise<RunningServer>;
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
	const startReplica = (extraArgs: string[] = []) => {
		let dataDir = sharedDataDir;
		if (s3) {
			dataDir = mkdtempSync(join(tmpdir(), 'imagegen-replica-'));
			ownDataDirs.push(dataDir);
		}
		return startServer({ dataDir, args: [...fleetArgs, ...extraArgs] });
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

/** The URL of a hosted file as served by another replica (file URLs carry the issuing replica's origin). */
export function onReplica(fileUrl: string, replica: RunningServer): string {
	const url = new URL(fileUrl);
	return `${replica.origin}${url.pathname}`;
}
