/** The embedded object storage (files on disk) against the storage contract; the data dir's file metadata has its own suite (file-metadata-sqlite.test.ts). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
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
