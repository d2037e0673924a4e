/**
 * Every PostgreSQL engine in one module, so that the service loads `pg` and them with one dynamic
 * import when `--database-url` is given, and never otherwise (plugins/backends.ts).
 */
export { openDatabase } from './postgres';
export { PgFileMetadataStore } from './pg-file-metadata';
export { PgIdempotencyStore } from './pg-idempotency-store';
export { PgRateLimiter } from './pg-rate-limiter';
export { PgUsageLedger } from './pg-usage-ledger';
export { PgKeyStore } from './pg-key-store';
