/** The embedded drivers (disk object storage, SQLite file metadata) against the driver contracts. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
import { SqliteFileMetadata } from '../../../server/src/storage/sqlite-file-metadata';
import { describeFileMetadataContract } from '../support/file-metadata-contract';
import { describeObjectStorageContract } from '../support/object-storage-contract';

const directories: string[] = [];
const scratch = () => {
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-driver-'));
	directories.push(directory);
	return directory;
};
afterAll(() => {
	for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describeObjectStorageContract('disk', async () => {
	const storage = new DiskObjectStorage({ directory: scratch() });
	await storage.init();
	return storage;
});

describeFileMetadataContract('SQLite', async () => {
	const dataDir = scratch();
	// Every open() is a connection of its own on the data dir's database, as another process's is.
	const databases: SqliteDatabase[] = [];
	return {
		open: async () => {
			const database = openSqliteDatabase(dataDir);
			databases.push(database);
			return new SqliteFileMetadata(database);
		},
		close: async () => {
			for (const database of databases) database.close();
		},
	};
});
