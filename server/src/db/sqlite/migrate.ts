/**
 * Brings an SQLite database to the schema of `SQLITE_MIGRATIONS`. `PRAGMA user_version` records
 * how far it is; the steps run inside one IMMEDIATE transaction, which takes the write lock first,
 * so processes that start together queue on it and exactly one of them runs each step.
 */
import type Database from 'better-sqlite3';
import { SQLITE_MIGRATIONS, type SqliteMigration } from './migrations';

export interface SqliteMigrationLog {
	info(details: object, message: string): void;
}

/** Answers the versions applied by this call (empty when the schema was already current). */
export function migrateSqlite(database: Database.Database, log?: SqliteMigrationLog, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number[] {
	const steps = [...migrations].sort((a, b) => a.version - b.version);
	const applied = database.transaction(() => {
		const current = refuseNewerSchema(database, migrations);
		const done: SqliteMigration[] = [];
		for (const step of steps) {
			if (step.version <= current) continue;
			try {
				database.exec(step.sql);
			} catch (error) {
				throw new Error(`database migration ${step.version} (${step.name}) failed: ${(error as Error).message}`, { cause: error });
			}
			done.push(step);
		}
		if (done.length > 0) database.pragma(`user_version = ${done[done.length - 1]!.version}`);
		return done;
	}).immediate();
	for (const step of applied) log?.info({ version: step.version, name: step.name }, 'database migrated');
	return applied.map((step) => step.version);
}

/**
 * A schema this release does not know was made by a newer one: its tables may mean things this
 * code would misread or overwrite, so nothing runs on it. Answers the file's version otherwise.
 */
export function refuseNewerSchema(database: Database.Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number {
	const current = database.pragma('user_version', { simple: true }) as number;
	const newest = Math.max(0, ...migrations.map((step) => step.version));
	if (current > newest) {
		throw new Error(
			`the database ${database.name} has schema version ${current}, but the newest this release knows is ${newest}: a newer imagegen-server wrote it. ` +
				'Run that release (or a newer one), or restore a backup taken before the upgrade',
		);
	}
	return current;
}
