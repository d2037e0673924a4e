/** The embedded drivers (disk object storage, JSON file metadata) against the driver contracts. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskObjectStorage } from '../../server/src/storage/disk-object-storage';
import { EmbeddedFileMetadata } from '../../server/src/storage/embedded-file-metadata';
import { describeFileMetadataStore, describeObjectStorage } from './support/storage-contracts';

const scratch = () => {
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-driver-'));
	return { directory, close: async () => rmSync(directory, { recursive: true, force: true }) };
};

describeObjectStorage('disk', async () => {
	const { directory, close } = scratch();
	const storage = new DiskObjectStorage({ directory });
	await storage.init();
	return { storage, close };
});

describeFileMetadataStore('embedded', async () => {
	const { directory, close } = scratch();
	const metadata = new EmbeddedFileMetadata({ directory });
	await metadata.init();
	return { metadata, close };
});
