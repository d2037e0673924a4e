/**
 * A fresh data dir for each test, whose database a test opens as often as it needs: each opening
 * is a connection of its own, as another process's would be. All are closed and the data dir
 * removed after the test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/sqlite/database';

export interface SqliteDataDir {
	path(): string;
	openDatabase(): SqliteDatabase;
}

export function useSqliteDataDir(prefix: string): SqliteDataDir {
	let dataDir = '';
	const opened: SqliteDatabase[] = [];
	beforeEach(() => {
		dataDir = mkdtempSync(join(tmpdir(), prefix));
	});
	afterEach(() => {
		for (const database of opened.splice(0)) database.close();
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
