/**
 * The embedded database's schema as an ordered list of steps, as for PostgreSQL
 * (db/migrations.ts). A released step is never edited: a change is a new step at the end.
 * Each domain's tables are written beside the others here so the whole schema reads in one place.
 */
export interface SqliteMigration {
	version: number;
	name: string;
	sql: string;
}

const FILES = `
	-- FILES_SCHEMA
`;

const IDEMPOTENCY = `
	-- IDEMPOTENCY_SCHEMA
`;

const USAGE = `
	-- USAGE_SCHEMA
`;

const KEYS = `
	-- KEYS_SCHEMA
`;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
	{ version: 1, name: 'hosted files and their reservations', sql: FILES },
	{ version: 2, name: 'idempotency records', sql: IDEMPOTENCY },
	{ version: 3, name: 'the usage ledger', sql: USAGE },
	{ version: 4, name: 'managed keys and their charges', sql: KEYS },
];
