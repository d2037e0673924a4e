/**
 * A fresh data dir for each test, whose database a test opens as often as it needs: each opening
 * is a connection of its own, as another process's would be. All are closed (their group commits
 * first) and the data dir removed after the test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';

export interface SqliteDataDir {
	path(): string;
	openDatabase(): SqliteDatabase;
}

/**
 * For an engine's contract: a fresh data dir; each `open()` an engine on a connection of its own to
 * its database (a restart, or another process), and `cleanup()` closes them all
 * (`closeDatabase`, by default the connection only) and removes the data dir.
 */
export async function connectionPerOpen<Engine>(
	prefix: string,
	engine: (database: SqliteDatabase) => Engine,
	closeDatabase: (database: SqliteDatabase) => void | Promise<void> = (database) => void (database.open && database.close()),
): Promise<{ dataDir: string; open(): Promise<Engine>; cleanup(): Promise<void> }> {
	const dataDir = await mkdtemp(join(tmpdir(), prefix));
	const databases: SqliteDatabase[] = [];
	return {
		dataDir,
		async open() {
			const database = openSqliteDatabase(dataDir);
			databases.push(database);
			return engine(database);
		},
		async cleanup() {
			for (const database of databases.splice(0)) await closeDatabase(database);
			await rm(dataDir, { recursive: true, force: true });
		},
	};
}

export function useSqliteDataDir(prefix: string): SqliteDataDir {
	let dataDir = '';
	const opened: SqliteDatabase[] = [];
	beforeEach(() => {
		dataDir = mkdtempSync(join(tmpdir(), prefix));
	});
	afterEach(async () => {
		// Its connection in the process's commit thread too, as the service's close does.
		for (const database of opened.splice(0)) {
			if (database.open) await groupCommitOf(database).close();
			database.close();
		}
		rmSync(dataDir, { recursive: true, force: true });
	});
	return {
		path: () => dataDir,
		openDatabase: () => {
			const database = openSqliteDatabase(dataDir);
			opened.push(database);
			return database;
		},
	};
}
