/** The embedded drivers (disk object storage, JSON file metadata) against the driver contracts. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskObjectStorage } from '../../server/src/storage/disk-object-storage';
import { EmbeddedFileMetadata } from '../../server/src/storage/embedded-file-metadata';
import { describeFileMetadataContract } from './support/file-metadata-contract';
import { describeObjectStorageContract } from './support/object-storage-contract';

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

describeFileMetadataContract(
	'embedded',
	async () => {
		const directory = scratch();
		// One process owns a data dir: every open() answers the same store, as the contract allows.
		const metadata = new EmbeddedFileMetadata({ directory });
		await metadata.init();
		return { open: async () => metadata, close: async () => undefined };
	},
	{ parallelSweepers: false, sweepsAbandonedWrites: false },
);
