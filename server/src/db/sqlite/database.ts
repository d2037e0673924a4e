/**
 * The single-machine default's database: one SQLite file in the data dir holding everything but
 * the hosted bytes (file metadata, idempotency records, the usage ledger, managed keys and their
 * charges). Several processes may open it at once (the service, the keys CLI, a second service
 * during a restart): SQLite's file locks serialise their writes, WAL lets reads go on meanwhile.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BUSY_WAIT_MS, waitFromTimers } from './busy';
import { isDamage, quickCheckProblems } from './condition';
import { migrateSqlite, type SqliteMigrationLog } from './migrate';

export type SqliteDatabase = Database.Database;
export type SqliteStatement = ReturnType<SqliteDatabase['prepare']>;

/**
 * One prepared statement per SQL text, made on first use: for stores that run texts shared with
 * PostgreSQL (and a PATCH's UPDATE, whose text depends on the columns it sets).
 */
export function statementCache(database: SqliteDatabase): (text: string) => SqliteStatement {
	const prepared = new Map<string, SqliteStatement>();
	return (text) => {
		let statement = prepared.get(text);
		if (!statement) {
			statement = database.prepare(text);
			prepared.set(text, statement);
		}
		return statement;
	};
}

const DATABASE_FILE = 'imagegen.db';

/**
 * How long a statement of a command (keys, backup) or of the service's start waits for another
 * process's write lock before it fails with SQLITE_BUSY. SQLite waits in the calling thread:
 * fine for a command, not for a serving service (see `serving`).
 */
export const BUSY_TIMEOUT_MS = BUSY_WAIT_MS;

interface OpenSqliteOptions {
	log?: SqliteMigrationLog;
	busyTimeoutMs?: number;
	/**
	 * The service's connection: once migrated, a statement never waits for a lock in SQLite (that
	 * would stop the event loop); its writes wait from a timer instead (`whenUnlocked`).
	 */
	serving?: boolean;
}

export function databasePath(dataDir: string): string {
	return join(dataDir, DATABASE_FILE);
}

export function openSqliteDatabase(dataDir: string, options: OpenSqliteOptions = {}): SqliteDatabase {
	mkdirSync(dataDir, { recursive: true, mode: 0o700 });
	createPrivately(databasePath(dataDir));
	const database = new Database(databasePath(dataDir), { timeout: options.busyTimeoutMs ?? BUSY_TIMEOUT_MS });
	try {
		refuseDamaged(database);
		// Only takes effect on a new file (before the first table): freed pages can then be given back
		// to the file system in steps, so the file stops growing once retention has turned over.
		database.pragma('auto_vacuum = INCREMENTAL');
		database.pragma('journal_mode = WAL');
		// Every commit reaches the disk before it is acknowledged: an answered generation's usage line
		// and an acknowledged upload survive a power cut, not only a killed process.
		database.pragma('synchronous = FULL');
		database.pragma('foreign_keys = ON');
		migrateSqlite(database, options.log);
		if (options.serving) waitFromTimers(database);
		return database;
	} catch (error) {
		database.close();
		if (isDamage(error)) throw damaged(database, [(error as Error).message], error);
		throw error;
	}
}

/**
 * A damaged page is found now rather than by the first request that reads it (each of which would
 * fail): `quick_check` reads every page once.
 */
function refuseDamaged(database: SqliteDatabase): void {
	const problems = quickCheckProblems(database);
	if (problems.length > 0) throw damaged(database, problems);
}

function damaged(database: SqliteDatabase, problems: readonly string[], cause?: unknown): Error {
	return new Error(
		`the database ${database.name} is damaged (PRAGMA quick_check: ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? '; …' : ''}). ` +
			'Stop every process on the data dir and restore the latest copy made by `imagegen-server backup`',
		{ cause },
	);
}

/**
 * Key hashes, spend and kept answers are for the service's user only, whatever the umask. SQLite
 * gives its -wal and -shm files the mode of the database file, so creating that one is enough.
 */
export function createPrivately(file: string): void {
	closeSync(openSync(file, 'a', 0o600));
}

/**
 * The values of a statement written with PostgreSQL's numbered parameters (`$1`, `$2`, …), which
 * SQLite reads as named ones, so that one text serves both engines: as SQLite stores them (Dates as
 * unix milliseconds, booleans as 0/1, arrays as JSON text).
 */
export function bindNumbered(values: readonly unknown[]): Record<string, unknown> {
	const named: Record<string, unknown> = {};
	values.forEach((value, index) => (named[index + 1] = sqliteValue(value)));
	return named;
}

function sqliteValue(value: unknown): unknown {
	if (value instanceof Date) return value.getTime();
	if (typeof value === 'boolean') return value ? 1 : 0;
	if (Array.isArray(value)) return JSON.stringify(value);
	return value;
}
