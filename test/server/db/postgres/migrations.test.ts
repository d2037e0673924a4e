/**
 * Opening the database brings the schema up to date exactly once, however many replicas start
 * together, a dropped connection does not end the process, and a database that cannot be used
 * is a clear error naming the flag.
 */
import { createServer } from 'node:net';
import { Pool } from 'pg';
import { migrate } from '../../../../server/src/db/postgres/migrate';
import { MIGRATIONS } from '../../../../server/src/db/postgres/migrations';
import { openDatabase, type Database } from '../../../../server/src/db/postgres/postgres';
import { usePostgresCluster } from '../../support/postgres';

const postgres = usePostgresCluster();
const opened: Database[] = [];
afterEach(async () => {
	await Promise.all(opened.splice(0).map((database) => database.close()));
});

function recordingLog() {
	const migrated: number[] = [];
	return {
		migrated,
		info: (details: object, message: string) => {
			if (message === 'database migrated') migrated.push((details as { version: number }).version);
		},
		error: () => undefined,
	};
}

async function open(url: string, log = recordingLog()): Promise<Database> {
	const database = await openDatabase(url, { log });
	opened.push(database);
	return database;
}

async function appliedVersions(database: Database) {
	const { rows } = await database.pool.query<{ version: number; applied_at: Date }>('SELECT version, applied_at FROM schema_migrations ORDER BY version');
	return rows;
}

const ALL_VERSIONS = MIGRATIONS.map((migration) => migration.version);
const ALL_TABLES = ['api_keys', 'budget_alerts', 'files', 'generation_jobs', 'idempotency_files', 'idempotency_keys', 'key_spend_days', 'provenance_records', 'rate_limit_buckets', 'schema_migrations', 'service_secrets', 'usage_days', 'usage_lines', 'webhook_outbox'];

async function tableNames(database: Database): Promise<string[]> {
	const { rows } = await database.pool.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename");
	return rows.map((row) => row.tablename);
}

describe('migrations', () => {
	it('creates the schema on a fresh database and is a no-op the second time', async () => {
		const url = await postgres.createDatabase();
		const first = recordingLog();
		const database = await open(url, first);
		expect(first.migrated).toEqual(ALL_VERSIONS);
		const before = await appliedVersions(database);
		expect(before.map((row) => row.version)).toEqual(ALL_VERSIONS);
		expect(await tableNames(database)).toEqual(ALL_TABLES);

		const second = recordingLog();
		const again = await open(url, second);
		expect(second.migrated).toEqual([]);
		expect(await appliedVersions(again)).toEqual(before);
	});

	it('five replicas opening a fresh database at the same moment all succeed, and the schema is made once', async () => {
		const url = await postgres.createDatabase();
		const logs = Array.from({ length: 5 }, () => recordingLog());
		const databases = await Promise.all(logs.map((log) => open(url, log)));
		expect(databases).toHaveLength(5);
		expect(logs.flatMap((log) => log.migrated).sort((a, b) => a - b)).toEqual(ALL_VERSIONS);
		expect((await appliedVersions(databases[4]!)).map((row) => row.version)).toEqual(ALL_VERSIONS);
		for (const database of databases) {
			expect(await tableNames(database)).toEqual(ALL_TABLES);
			await expect(database.pool.query('SELECT count(*)::int AS files FROM files')).resolves.toMatchObject({ rows: [{ files: 0 }] });
		}
	});

	it('a failing step rolls back entirely, names itself, and leaves the steps before it applied', async () => {
		const url = await postgres.createDatabase();
		const pool = new Pool({ connectionString: url });
		try {
			const steps = [
				{ version: 1, name: 'good', sql: 'CREATE TABLE a (x integer)' },
				{ version: 2, name: 'half bad', sql: 'CREATE TABLE b (x integer); SELECT no_such_column FROM a' },
			];
			await expect(migrate(pool, undefined, steps)).rejects.toThrow(/migration 2 \(half bad\) failed: .*no_such_column/);
			const { rows } = await pool.query<{ version: number }>('SELECT version FROM schema_migrations');
			expect(rows.map((row) => row.version)).toEqual([1]);
			const { rows: tables } = await pool.query("SELECT 1 FROM pg_tables WHERE tablename = 'b'");
			expect(tables).toEqual([]);

			steps[1]!.sql = 'CREATE TABLE b (x integer)';
			expect(await migrate(pool, undefined, steps)).toEqual([2]);
			expect(await migrate(pool, undefined, steps)).toEqual([]);
		} finally {
			await pool.end();
		}
	});
	it('refuses a database a newer release migrated, naming its version and the newest this release knows, and changes nothing', async () => {
		const url = await postgres.createDatabase();
		const database = await open(url);
		const newest = Math.max(...ALL_VERSIONS);
		await database.pool.query("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from a newer release')", [newest + 95]);
		const before = await appliedVersions(database);

		const error = await openDatabase(url).then(
			(again) => {
				opened.push(again);
				return new Error('opened');
			},
			(caught: Error) => caught,
		);
		expect(error.message).toMatch(new RegExp(`--database-url: .*schema version ${newest + 95}, but the newest this release knows is ${newest}`));
		expect(await appliedVersions(database)).toEqual(before);
	});
});

describe('an open database', () => {
	it('survives its idle connections being cut (a database restart) and reconnects', async () => {
		const url = await postgres.createDatabase();
		const errors: string[] = [];
		const database = await openDatabase(url, { log: { info: () => undefined, error: (_details, message) => void errors.push(message) } });
		opened.push(database);
		await Promise.all([database.pool.query('SELECT 1'), database.pool.query('SELECT 2')]);
		const idle = database.pool.idleCount;
		expect(idle).toBeGreaterThan(0);
		await postgres.admin(
			postgres.url('postgres'),
			`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'imagegen-server' AND datname = '${new URL(url).pathname.slice(1)}'`,
		);
		const deadline = Date.now() + 5000;
		while (errors.length < idle && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
		expect(errors).toEqual(Array(idle).fill('PostgreSQL connection lost'));
		expect(database.pool.idleCount).toBe(0);
		await expect(database.pool.query('SELECT 42 AS answer')).resolves.toMatchObject({ rows: [{ answer: 42 }] });
	});
});

describe('a database that cannot be used', () => {
	async function failure(url: string): Promise<Error> {
		const error = await openDatabase(url, { connectTimeoutMs: 5000 }).then(
			(database) => {
				opened.push(database);
				throw new Error('opened');
			},
			(caught: unknown) => caught as Error,
		);
		expect(error).toBeInstanceOf(Error);
		expect(error.message).toMatch(/--database-url/);
		return error;
	}

	it('is not a URL, or not a PostgreSQL one', async () => {
		expect((await failure('not a url')).message).toMatch(/postgres:\/\/user:password@host/);
		const mysql = await failure('mysql://root:hunter2secret@127.0.0.1:3306/db');
		expect(mysql.message).toMatch(/postgres:\/\/ or postgresql:\/\/; got mysql:/);
		expect(mysql.message).not.toContain('hunter2secret');
	});

	it('is not reachable: the message names host, port and user but never the password', async () => {
		const port = await closedPort();
		const error = await failure(`postgres://imagegen:s3cret-Passw0rd@127.0.0.1:${port}/imagegen`);
		expect(error.message).toContain(`imagegen@127.0.0.1:${port}/imagegen`);
		expect(error.message).toMatch(/ECONNREFUSED/);
		expect(error.message).not.toContain('s3cret-Passw0rd');
	});

	it('refuses the password: the message says so without printing it', async () => {
		const error = await failure(`postgres://postgres:wrong-Passw0rd@127.0.0.1:${postgres.port}/postgres`);
		expect(error.message).toMatch(/password authentication failed/);
		expect(error.message).not.toContain('wrong-Passw0rd');
	});

	it('does not exist', async () => {
		const error = await failure(postgres.url('no_such_database'));
		expect(error.message).toMatch(/database "no_such_database" does not exist/);
		expect(error.message).not.toContain(new URL(postgres.url('x')).password);
	});
});

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const address = server.address();
			server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
		});
	});
}
