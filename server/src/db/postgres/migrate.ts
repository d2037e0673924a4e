/**
 * Brings a database to the schema of `MIGRATIONS`. Replicas that start at the same moment queue
 * on one advisory lock, so exactly one of them runs each step and the others find it done.
 */
import type { Pool, PoolClient } from 'pg';
import { withConnection } from './connection';
import { MIGRATIONS, type Migration } from './migrations';

/** Any fixed number; it only has to be the same in every replica of this service. */
const MIGRATION_LOCK_ID = 7_320_111_804;

interface MigrationLog {
	info(details: object, message: string): void;
}

/** Answers the versions applied by this call (empty when the schema was already current). */
export function migrate(pool: Pool, log?: MigrationLog, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
	// On failure the connection is closed rather than pooled, which also releases the lock.
	return withConnection(pool, async (client) => {
		await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
		const applied = await applyMissing(client, migrations, log);
		await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
		return applied;
	});
}

async function applyMissing(client: PoolClient, migrations: readonly Migration[], log?: MigrationLog): Promise<number[]> {
	await client.query(`
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY,
			name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`);
	const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
	const done = new Set(rows.map((row) => row.version));
	refuseNewerSchema(done, migrations);
	const applied: number[] = [];
	for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
		if (done.has(migration.version)) continue;
		await client.query('BEGIN');
		try {
			await client.query(migration.sql);
			await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
			await client.query('COMMIT');
		} catch (error) {
			throw new Error(`database migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}`, { cause: error });
		}
		applied.push(migration.version);
		log?.info({ version: migration.version, name: migration.name }, 'database migrated');
	}
	return applied;
}

/**
 * A version this release has no step for was applied by a newer one: its tables may mean things
 * this code would misread or overwrite, so nothing runs on it.
 */
function refuseNewerSchema(applied: ReadonlySet<number>, migrations: readonly Migration[]): void {
	const current = Math.max(0, ...applied);
	const newest = Math.max(0, ...migrations.map((migration) => migration.version));
	if (current > newest) {
		throw new Error(
			`the database has schema version ${current}, but the newest this release knows is ${newest}: a newer imagegen-server migrated it. ` +
				'Run that release (or a newer one), or restore a backup taken before the upgrade',
		);
	}
}
