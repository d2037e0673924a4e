/**
 * Chooses the engines behind the interfaces from the configuration: bytes on disk or in S3,
 * metadata / usage / rate limits / idempotency keys in the data dir or in PostgreSQL, and decorates
 * the instance with them (`storage`, `fileMetadata`, `usageLedger`, `rateLimiter`,
 * `idempotencyStore`, `keyStore`, `jobStore`, `outboxStore`, `provenanceRecords`). Routes only ever see the interfaces. Closing the instance flushes the ledger
 * and closes every engine.
 *
 * The PostgreSQL and S3 engines are loaded only when the configuration chooses them: `pg` and the
 * AWS SDK take resident memory that a service on the data dir would carry for nothing.
 */
import { join } from 'node:path';
import fp from 'fastify-plugin';
import type { ServiceConfig, StorageConfig } from '../config';
import type { IdempotencyStore } from '../idempotency/idempotency-store';
import { SqlIdempotencyStore } from '../idempotency/sql-idempotency-store';
import type { JobStore } from '../jobs/job-store';
import { SqlJobStore } from '../jobs/sql-job-store';
import type { KeyStore } from '../keys/key-store';
import { SqlKeyStore } from '../keys/sql-key-store';
import type { RateLimiter } from '../limits/rate-limiter';
import { SqlRateLimiter } from '../limits/sql-rate-limiter';
import { recordKeepingMs, type ProvenanceRecordStore, type ProvenanceStoreOptions } from '../provenance/provenance-records';
import { SqlProvenanceStore } from '../provenance/sql-provenance-store';
import { openSqliteDatabase } from '../db/sqlite/database';
import { SqliteAdapter } from '../db/sqlite/sqlite-adapter';
import { DiskObjectStorage } from '../storage/disk-object-storage';
import type { FileMetadataStore } from '../storage/file-metadata';
import type { ObjectStorage } from '../storage/object-storage';
import { SqlFileMetadata } from '../storage/sql-file-metadata';
import type { LedgerLog } from '../usage/retry-queue';
import { SqlUsageLedger } from '../usage/sql-usage-ledger';
import type { UsageLedger } from '../usage/usage-ledger';
import type { OutboxStore } from '../webhooks/outbox-store';
import { SqlOutboxStore } from '../webhooks/sql-outbox-store';

/** What the routes see of the engines: the bytes' storage and one store per domain, each an instance decorator. */
interface Stores {
	storage: ObjectStorage;
	fileMetadata: FileMetadataStore;
	usageLedger: UsageLedger;
	rateLimiter: RateLimiter;
	idempotencyStore: IdempotencyStore;
	/** Managed keys and their spend. */
	keyStore: KeyStore;
	/** Generations as jobs. */
	jobStore: JobStore;
	/** Webhook deliveries waiting to go out, and the secret they are signed from. */
	outboxStore: OutboxStore;
	/** What watermarks name: the generation, model and key of each marked image. */
	provenanceRecords: ProvenanceRecordStore;
}

declare module 'fastify' {
	// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the decorators are the stores
	interface FastifyInstance extends Stores {}
}

/** The engines opened for the configuration, as their stores, and how to close them. */
export interface Engines extends Stores {
	/** Closed last, after every engine that uses it. */
	close?: () => Promise<void>;
	/** Told of every request that failed: the embedded database learns of a full disk or a damaged page. */
	noteFailure?: (error: unknown) => void;
}

/** `log` receives the engines' own reports (a failing ledger append, a recovery). */
export async function openEngines(config: ServiceConfig, log: Required<LedgerLog>): Promise<Engines> {
	if (config.databaseUrl !== undefined) return openDatabaseEngines(config, log);
	const database = openSqliteDatabase(config.dataDir, { log, serving: true });
	const adapter = new SqliteAdapter(database);
	try {
		const storage = config.storage.engine === 's3' ? await openS3Storage(config.storage) : new DiskObjectStorage({ directory: join(config.dataDir, 'files') });
		const fileMetadata = new SqlFileMetadata(adapter);
		if (storage instanceof DiskObjectStorage) await storage.init();
		// Writes killed mid-way (SIGKILL, power loss) leave a reservation naming their process:
		// what they wrote goes now, not at the reservation's expiry.
		await fileMetadata.releaseAbandonedWrites(isProcessAlive, (key) => storage.removeIncomplete(key));
		if (storage instanceof DiskObjectStorage) {
			// Every write is reserved in the database before its first byte and forgotten after its
			// last, so bytes the database knows nothing of belong to no writer, here or in another
			// process on this data dir: they go now, whatever their age.
			await storage.removeOrphans((key) => fileMetadata.holdsStorageKey(key), { olderThanMs: -1, now: Date.now() });
		}
		// Now rather than at the first write, which would wait for the commit thread to load.
		await adapter.start();
		const usageLedger = new SqlUsageLedger(adapter, { log });
		return {
			storage,
			fileMetadata,
			usageLedger,
			rateLimiter: new SqlRateLimiter(adapter, config.rateLimitPerMinute),
			idempotencyStore: new SqlIdempotencyStore(adapter),
			keyStore: new SqlKeyStore(adapter),
			jobStore: new SqlJobStore(adapter),
			outboxStore: new SqlOutboxStore(adapter),
			provenanceRecords: new SqlProvenanceStore(adapter, provenanceStoreOptions(config)),
			noteFailure: (error) => adapter.noteFailure(error),
			close: () => adapter.close(),
		};
	} catch (error) {
		await adapter.close();
		throw error;
	}
}

/** A record is kept as long as its file, and --provenance-record-days more; the prompt only with --provenance-include-prompt. */
function provenanceStoreOptions(config: ServiceConfig): ProvenanceStoreOptions {
	return { keepForMs: recordKeepingMs(config.retentionSeconds, config.provenanceRecordDays), includePrompt: config.provenance.includePrompt };
}

/**
 * Whether a process of this machine still runs: how a start tells a write killed mid-way from one
 * another process on the data dir is still doing. A recycled pid reads as alive, which only
 * leaves that write's leftovers to the sweep at its expiry.
 */
function isProcessAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		// EPERM: it runs, under another user.
		return (error as NodeJS.ErrnoException).code !== 'ESRCH';
	}
}

/** An S3-compatible bucket; a wrong bucket, endpoint or credential stops the start. */
async function openS3Storage(storage: Extract<StorageConfig, { engine: 's3' }>): Promise<ObjectStorage> {
	const { bucket, endpoint, region, forcePathStyle, prefix } = storage;
	const { S3ObjectStorage } = await import('../storage/s3-object-storage');
	return S3ObjectStorage.open({ bucket, endpoint, region, forcePathStyle, prefix });
}

/**
 * Everything but the bytes in PostgreSQL, so replicas share it; bytes still come from
 * `config.storage`. The schema is brought up to date (under an advisory lock) before anything runs.
 */
async function openDatabaseEngines(config: ServiceConfig, log: Required<LedgerLog>): Promise<Engines> {
	const { openDatabase } = await import('./postgres-engines');
	const database = await openDatabase(config.databaseUrl!, { log, statementTimeoutMs: config.databaseTimeoutMs });
	try {
		const storage = config.storage.engine === 's3' ? await openS3Storage(config.storage) : await openSharedDisk(config);
		// Lines the database could not take before a shutdown or crash are kept in the data dir.
		const usageLedger = new SqlUsageLedger(database, { log, pendingDir: config.dataDir });
		await usageLedger.start();
		return {
			storage,
			fileMetadata: new SqlFileMetadata(database),
			usageLedger,
			rateLimiter: new SqlRateLimiter(database, config.rateLimitPerMinute),
			idempotencyStore: new SqlIdempotencyStore(database),
			keyStore: new SqlKeyStore(database),
			jobStore: new SqlJobStore(database),
			outboxStore: new SqlOutboxStore(database),
			provenanceRecords: new SqlProvenanceStore(database, provenanceStoreOptions(config)),
			close: () => database.close(),
		};
	} catch (error) {
		await database.close();
		throw error;
	}
}

/**
 * Disk storage with shared metadata (replicas on one network file system): leftovers are found
 * through the reservations in the database, never by scanning a directory others write to.
 */
async function openSharedDisk(config: ServiceConfig): Promise<ObjectStorage> {
	const storage = new DiskObjectStorage({ directory: join(config.dataDir, 'files') });
	await storage.init();
	return storage;
}

export default fp<{ engines: Engines }>(
	async (fastify, { engines }) => {
		fastify.decorate('storage', engines.storage);
		fastify.decorate('fileMetadata', engines.fileMetadata);
		fastify.decorate('usageLedger', engines.usageLedger);
		fastify.decorate('rateLimiter', engines.rateLimiter);
		fastify.decorate('idempotencyStore', engines.idempotencyStore);
		fastify.decorate('keyStore', engines.keyStore);
		fastify.decorate('jobStore', engines.jobStore);
		fastify.decorate('outboxStore', engines.outboxStore);
		fastify.decorate('provenanceRecords', engines.provenanceRecords);
		const { noteFailure } = engines;
		if (noteFailure) fastify.addHook('onError', async (_request, _reply, error) => noteFailure(error));
		fastify.addHook('onClose', async () => {
			// Usage is billing data: every accepted line is written before the engines go away.
			await engines.usageLedger.close();
			await Promise.all([
				engines.fileMetadata.close?.(),
				engines.rateLimiter.close?.(),
				engines.idempotencyStore.close?.(),
				engines.keyStore.close?.(),
				engines.jobStore.close?.(),
				engines.outboxStore.close?.(),
				engines.provenanceRecords.close?.(),
				engines.storage.close?.(),
			]);
			await engines.close?.();
		});
	},
	{ name: 'engines', dependencies: ['config'] },
);
