/**
 * The PostgreSQL schema as an ordered list of steps. A step, once released, is never edited: a
 * change is a new step at the end, so every database, whatever version it is at, reaches the same
 * schema. `schema_migrations` records which steps ran.
 */
export interface Migration {
	version: number;
	name: string;
	sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
	{
		version: 1,
		name: 'files, usage, rate limits, idempotency',
		sql: `
			CREATE TABLE files (
				id text PRIMARY KEY,
				storage_key text NOT NULL,
				owner_key_id text NOT NULL,
				published boolean NOT NULL DEFAULT false,
				name text,
				kind text,
				mime_type text,
				extension text,
				size bigint,
				etag text,
				created_at timestamptz,
				expires_at timestamptz NOT NULL
			);
			CREATE INDEX files_expires_at ON files (expires_at);

			CREATE TABLE usage_entries (
				request_id text PRIMARY KEY,
				api_key_id text NOT NULL,
				-- The UTC day as YYYY-MM-DD text, compared as text like the embedded ledger does.
				day text COLLATE "C" NOT NULL,
				model text COLLATE "C" NOT NULL,
				images integer NOT NULL,
				cost_usd numeric NOT NULL,
				at timestamptz NOT NULL
			);
			CREATE INDEX usage_entries_key_day ON usage_entries (api_key_id, day);

			CREATE TABLE rate_limit_buckets (
				api_key_id text PRIMARY KEY,
				tokens double precision NOT NULL,
				allowed boolean NOT NULL,
				updated_at timestamptz NOT NULL
			);

			CREATE TABLE idempotency_keys (
				api_key_id text NOT NULL,
				key text NOT NULL,
				fingerprint text NOT NULL,
				completed boolean NOT NULL DEFAULT false,
				lease_until timestamptz NOT NULL,
				expires_at timestamptz NOT NULL,
				status integer,
				content_type text,
				body text,
				PRIMARY KEY (api_key_id, key)
			);
			CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
		`,
	},
	{
		version: 2,
		name: 'the provider that served each generation',
		sql: `
			-- NULL on rows written before fallback chains existed.
			ALTER TABLE usage_entries ADD COLUMN provider text;
		`,
	},
];
