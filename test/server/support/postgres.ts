/**
 * A real PostgreSQL for a test file: `startTestPostgres()` in beforeAll starts one cluster on a
 * free loopback port (≈ 2 s), `createDatabase()` gives each test that needs one an empty database,
 * and `stop()` in afterAll ends the cluster and removes its files. The cluster runs under a small
 * child process that also stops it if this test process dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { openDatabase, type Database } from '../../../server/src/db/postgres/postgres';

const RUNNER = join(__dirname, 'postgres-process.mjs');
const START_TIMEOUT_MS = 60_000;

export interface TestPostgres {
	port: number;
	/** A URL of the `postgres` superuser for `database`. */
	url(database: string): string;
	/** Creates an empty database with a random name and answers its URL. */
	createDatabase(): Promise<string>;
	/** Runs one statement as superuser on the database of `databaseUrl` (to break and repair things under test). */
	admin(databaseUrl: string, sql: string): Promise<void>;
	/** Stops the server (an outage: its port refuses connections); the data stays. */
	halt(): Promise<void>;
	/** Starts the halted server again on the same port. */
	resume(): Promise<void>;
	stop(): Promise<void>;
}

export interface RunnerOptions {
	/** Another copy of postgres-process.mjs (a clone elsewhere); this one by default. */
	runner?: string;
	/** Extra options for node before the runner's path. */
	nodeOptions?: string[];
}

export async function startTestPostgres(options: RunnerOptions = {}): Promise<TestPostgres> {
	const child = spawn(process.execPath, [...(options.nodeOptions ?? []), options.runner ?? RUNNER], { stdio: ['pipe', 'pipe', 'pipe'] });
	const { port, password } = await readyLine(child);
	const url = (database: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
	const admin = async (databaseUrl: string, sql: string) => {
		const client = new Client({ connectionString: databaseUrl });
		await client.connect();
		try {
			await client.query(sql);
		} finally {
			await client.end();
		}
	};
	const command = (line: 'halt' | 'resume', done: string) =>
		new Promise<void>((resolve, reject) => {
			let seen = '';
			const onData = (chunk: Buffer) => {
				seen += chunk.toString();
				if (!seen.split('\n').includes(done)) return;
				child.stdout!.off('data', onData);
				resolve();
			};
			child.stdout!.on('data', onData);
			child.stdin!.write(`${line}\n`, (error) => error && reject(error));
		});
	return {
		port,
		url,
		admin,
		halt: () => command('halt', 'halted'),
		resume: () => command('resume', 'resumed'),
		async createDatabase() {
			const name = `test_${randomBytes(8).toString('hex')}`;
			await admin(url('postgres'), `CREATE DATABASE ${name}`);
			return url(name);
		},
		stop: () => stopRunner(child),
	};
}

function readyLine(child: ChildProcess): Promise<{ port: number; password: string }> {
	return new Promise((resolve, reject) => {
		let stdout = '';
		let stderr = '';
		const timer = setTimeout(() => {
			void stopRunner(child);
			reject(new Error(`PostgreSQL did not start in ${START_TIMEOUT_MS / 1000} s:\n${stderr}`));
		}, START_TIMEOUT_MS);
		child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
		child.stdout!.on('data', (chunk: Buffer) => {
			stdout += chunk.toString();
			const line = stdout.split('\n')[0];
			if (stdout.includes('\n') && line) {
				clearTimeout(timer);
				resolve(JSON.parse(line) as { port: number; password: string });
			}
		});
		child.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`PostgreSQL runner exited with ${code} before it was ready:\n${stderr}`));
		});
	});
}

async function stopRunner(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
	child.stdin!.end();
	await exited;
}

/**
 * The test file's cluster, started in beforeAll and stopped in afterAll: the answer stands for it
 * from beforeAll on, so a suite declares it once instead of a variable and two hooks.
 */
export function usePostgresCluster(): TestPostgres {
	let cluster: TestPostgres | undefined;
	// Longer than the start's own limit, so that a slow start fails with PostgreSQL's words.
	beforeAll(async () => {
		cluster = await startTestPostgres();
	}, START_TIMEOUT_MS + 30_000);
	afterAll(() => cluster?.stop());
	const started = (): TestPostgres => {
		if (!cluster) throw new Error('usePostgresCluster: the cluster is started in beforeAll; use it from a hook or a test');
		return cluster;
	};
	return {
		get port() {
			return started().port;
		},
		url: (database) => started().url(database),
		createDatabase: () => started().createDatabase(),
		admin: (databaseUrl, sql) => started().admin(databaseUrl, sql),
		halt: () => started().halt(),
		resume: () => started().resume(),
		stop: () => started().stop(),
	};
}

/**
 * For an engine's contract: an empty database on `cluster`; each `open()` an engine on a pool of
 * its own (a restart, or another replica), and `cleanup()` closes every pool.
 */
export async function poolPerOpen<Engine>(cluster: TestPostgres, engine: (database: Database) => Engine): Promise<{ open(): Promise<Engine>; cleanup(): Promise<void> }> {
	const databaseUrl = await cluster.createDatabase();
	const pools: Database[] = [];
	return {
		async open() {
			const database = await openDatabase(databaseUrl);
			pools.push(database);
			return engine(database);
		},
		async cleanup() {
			await Promise.all(pools.splice(0).map((database) => database.close()));
		},
	};
}

/** The service's two metadata engines, for `describe.each`: the data dir, and a fresh database on `cluster`. */
export function metadataEngines(cluster: TestPostgres): Array<[string, () => Promise<string[]>]> {
	return [
		['data dir', async () => []],
		['PostgreSQL', async () => ['--database-url', await cluster.createDatabase()]],
	];
}

export interface DatabasePerTest {
	/** The cluster of this test file (started in beforeAll). */
	postgres(): TestPostgres;
	/** Opens `count` pools on this test's database, as `count` replicas would; closed after the test. */
	replicas(count: number): Promise<Database[]>;
}

/**
 * One cluster per test file and an empty database per test, so no test sees another's rows;
 * pools opened through `replicas()` are closed after each test.
 */
export function useDatabasePerTest(): DatabasePerTest {
	const cluster = usePostgresCluster();
	let url: string;
	const open: Database[] = [];
	beforeEach(async () => {
		url = await cluster.createDatabase();
	});
	afterEach(async () => {
		await Promise.all(open.splice(0).map((database) => database.close()));
	});
	return {
		postgres: () => cluster,
		async replicas(count) {
			const opened = await Promise.all(Array.from({ length: count }, () => openDatabase(url)));
			open.push(...opened);
			return opened;
		},
	};
}
