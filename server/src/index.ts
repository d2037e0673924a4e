/** Programmatic entry points of imagegen-server (the CLI is the usual way in). */
export { createService, type Service, type ServiceParts } from './app';
export { parseConfig, helpText, ConfigError, type ServiceConfig } from './config';
export { classifyAddress } from './net/address-policy';
export { createSafeFetcher, type FetchPolicy, type HostResolver, type RemoteFetcher } from './net/safe-fetch';
export { openEngines, type Engines } from './plugins/engines';
export { DiskObjectStorage } from './storage/disk-object-storage';
export { SqlFileMetadata } from './storage/sql-file-metadata';
export { openSqliteDatabase } from './db/sqlite/database';
export { HostedFiles } from './storage/hosted-files';
export { SqlUsageLedger } from './usage/sql-usage-ledger';
export { SqliteAdapter } from './db/sqlite/sqlite-adapter';
export { MemoryRateLimiter } from './limits/memory-rate-limiter';
