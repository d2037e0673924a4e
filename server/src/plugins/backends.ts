/**
 * Chooses the engines behind the interfaces from the configuration: bytes on disk or in S3,
 * metadata / usage / rate limits in the data dir or in PostgreSQL, and decorates the instance with
 * them (`storage`, `fileMetadata`, `usageLedger`, `rateLimiter`). Routes only ever see the
 * interfaces. Closing the instance flushes the ledger and closes every engine.
 */
import { join } from 'node:path';
import fp from 'fastify-plugin';
import type { ServiceConfig, StorageConfig } from '../config';
import { MemoryRateLimiter } from '../limits/memory-rate-limiter';
import type { RateLimiter } from '../limits/rate-limiter';
import { DiskObjectStorage } from '../storage/disk-object-storage';
import { EmbeddedFileMetadata } from '../storage/embedded-file-metadata';
import type { FileMetadataStore } from '../storage/file-metadata';
import type { ObjectStorage } from '../storage/object-storage';
import { JsonlUsageLedger, type LedgerLogger } from '../usage/jsonl-usage-ledger';
import type { UsageLedger } from '../usage/usage-ledger';

declare module 'fastify' {
	interface FastifyInstance {
		storage: ObjectStorage;
		fileMetadata: FileMetadataStore;
		usageLedger: UsageLedger;
		rateLimiter: RateLimiter;
		/** Extra cleanup per sweep for engines that can leave orphans behind (the embedded disk store). */
		removeStorageLeftovers?: () => Promise<number>;
	}
}

export interface Backends {
	storage: ObjectStorage;
	fileMetadata: FileMetadataStore;
	usageLedger: UsageLedger;
	rateLimiter: RateLimiter;
	removeStorageLeftovers?: () => Promise<number>;
}

/** Temp files and bytes without metadata older than this are leftovers of a crash or an abort. */
const LEFTOVERS_AFTER_MS = 15 * 60_000;

/** `log` receives the engines' own reports (a failing ledger append, a recovery). */
export async function openBackends(config: ServiceConfig, log: LedgerLogger): Promise<Backends> {
	if (config.databaseUrl !== undefined) return openDatabaseBackends(config, log);
	const filesDirectory = join(config.dataDir, 'files');
	const storage = config.storage.driver === 's3' ? await openS3Storage(config.storage) : new DiskObjectStorage({ directory: filesDirectory });
	const fileMetadata = new EmbeddedFileMetadata({ directory: filesDirectory, staleAfterMs: LEFTOVERS_AFTER_MS });
	await fileMetadata.init();
	let removeStorageLeftovers: (() => Promise<number>) | undefined;
	if (storage instanceof DiskObjectStorage) {
		await storage.init();
		const removeOrphans = async (olderThanMs: number) =>
			(await fileMetadata.removeUnreadable(olderThanMs)) +
			(await storage.removeOrphans(await fileMetadata.claimedKeys(), { olderThanMs, now: Date.now(), skip: EmbeddedFileMetadata.isMetadataFile }));
		// One process serves a data dir, so whatever is half-written when it starts was left by a
		// process that died mid-write (SIGKILL, power loss): it goes now, not after LEFTOVERS_AFTER_MS.
		await removeOrphans(-1);
		removeStorageLeftovers = () => removeOrphans(LEFTOVERS_AFTER_MS);
	}
	const usageLedger = await JsonlUsageLedger.open({ dataDir: config.dataDir, log });
	return { storage, fileMetadata, usageLedger, rateLimiter: new MemoryRateLimiter(config.rateLimitPerMinute), removeStorageLeftovers };
}

/**
 * S3-compatible storage. Wired in where S3ObjectStorage (storage/s3-object-storage.ts) is part of
 * the build: `new S3ObjectStorage({ bucket, endpoint, region, forcePathStyle, prefix })`.
 */
export async function openS3Storage(storage: Extract<StorageConfig, { driver: 's3' }>): Promise<ObjectStorage> {
	throw new Error(`--storage s3 (bucket ${storage.bucket}) is not available in this build`);
}

/**
 * PostgreSQL-backed metadata, usage ledger and rate limiter, wired in where db/ (openDatabase with
 * its migrations) is part of the build; bytes still come from `config.storage`.
 */
export async function openDatabaseBackends(config: ServiceConfig, log: LedgerLogger): Promise<Backends> {
	void config;
	void log;
	throw new Error('--database-url (PostgreSQL) is not available in this build');
}

export default fp<{ backends: Backends }>(
	async (fastify, { backends }) => {
		fastify.decorate('storage', backends.storage);
		fastify.decorate('fileMetadata', backends.fileMetadata);
		fastify.decorate('usageLedger', backends.usageLedger);
		fastify.decorate('rateLimiter', backends.rateLimiter);
		if (backends.removeStorageLeftovers) fastify.decorate('removeStorageLeftovers', backends.removeStorageLeftovers);
		fastify.addHook('onClose', async () => {
			// Usage is billing data: every accepted line is written before the engines go away.
			await backends.usageLedger.close();
			await Promise.all([backends.fileMetadata.close?.(), backends.rateLimiter.close?.(), backends.storage.close?.()]);
		});
	},
	{ name: 'backends', dependencies: ['config'] },
);
