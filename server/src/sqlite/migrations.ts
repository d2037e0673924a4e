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

// A row is a reservation (published = 0) from before the first byte is written, and a served file
// once published; writer_pid names the process writing a reservation's bytes, so a start can tell
// a write killed mid-way from one still running in another process. A sweeper claims expired rows by stamping them (sweep_token, sweep_until) so
// that another process's sweeper passes them by, and deletes them once their bytes are gone.
const FILES = `
	CREATE TABLE files (
		id TEXT PRIMARY KEY,
		storage_key TEXT NOT NULL,
		owner_key_id TEXT NOT NULL,
		expires_at INTEGER NOT NULL,
		published INTEGER NOT NULL DEFAULT 0,
		writer_pid INTEGER,
		name TEXT,
		kind TEXT,
		mime_type TEXT,
		extension TEXT,
		size INTEGER,
		etag TEXT,
		created_at INTEGER,
		sweep_token TEXT,
		sweep_until INTEGER
	) WITHOUT ROWID;
	CREATE INDEX files_by_expiry ON files (expires_at);
	CREATE INDEX files_reserved ON files (writer_pid) WHERE published = 0;
`;

// The answer body is a BLOB in the row, read only for a replay. The ids of the files an answer
// points at are rows of their own, so deleting a file finds its answers through an index.
const IDEMPOTENCY = `
	CREATE TABLE idempotency_keys (
		id INTEGER PRIMARY KEY,
		api_key_id TEXT NOT NULL,
		key TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		completed INTEGER NOT NULL DEFAULT 0,
		lease_until INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		status INTEGER,
		content_type TEXT,
		body BLOB,
		UNIQUE (api_key_id, key)
	);
	CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
	CREATE TABLE idempotency_files (
		answer_id INTEGER NOT NULL REFERENCES idempotency_keys (id) ON DELETE CASCADE,
		position INTEGER NOT NULL,
		file_id TEXT NOT NULL,
		PRIMARY KEY (answer_id, position)
	) WITHOUT ROWID;
	CREATE INDEX idempotency_files_by_file ON idempotency_files (file_id);
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
