/**
 * The database holds key hashes, spend and every kept answer: like the api-key file, it and its
 * write-ahead log are for the service's user only, whatever the umask; so is a backup of it.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backupSqliteDatabase } from '../../../../server/src/db/sqlite/backup';
import { databasePath, openSqliteDatabase } from '../../../../server/src/db/sqlite/database';

const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);

let directory: string;
const umask = process.umask();
beforeEach(() => {
	directory = mkdtempSync(join(tmpdir(), 'imagegen-sqlite-modes-'));
	// The common default: new files world-readable unless the service says otherwise.
	process.umask(0o022);
});
afterEach(() => {
	process.umask(umask);
	rmSync(directory, { recursive: true, force: true });
});

it('the database, its WAL files and a backup of it are readable by their owner only', () => {
	const dataDir = join(directory, 'data');
	const database = openSqliteDatabase(dataDir);
	try {
		database.exec('CREATE TABLE written (value TEXT); INSERT INTO written VALUES (\'x\')');
		const file = databasePath(dataDir);
		expect([modeOf(file), modeOf(`${file}-wal`), modeOf(`${file}-shm`)]).toEqual(['600', '600', '600']);
		const copy = join(directory, 'copy.db');
		backupSqliteDatabase(file, copy, { replace: false });
		expect(modeOf(copy)).toBe('600');
	} finally {
		database.close();
	}
});
