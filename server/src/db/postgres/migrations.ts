/**
 * The PostgreSQL schema as an ordered list of steps. Step 1 is the baseline: the whole schema of
 * the first release. A step, once released, is never edited: a change is a new step at the end, so
 * every database, whatever version it is at, reaches the same schema. `schema_migrations` records
 * which steps ran. The tables are those of the data dir (sqlite/migrations.ts), in PostgreSQL's types.
 */
export interface Migration {
	version: number;
	name: string;
	sql: string;
}

const FILES = `
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
		expires_at timestamptz NOT NULL,
		-- What the file says about its provenance; NULL answers as no manifest.
		provenance jsonb,
		-- NULL here: a pid names a writer only among the data dir's processes, which share one machine.
		writer_pid integer,
		-- A sweeper's claim on an expired row while it deletes the bytes: another sweeper passes the
		-- row by until sweep_until, then takes it over (its sweeper died).
		sweep_token text,
		sweep_until timestamptz
	);
	CREATE INDEX files_expires_at ON files (expires_at);
`;

const IDEMPOTENCY = `
	CREATE TABLE idempotency_keys (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		api_key_id text NOT NULL,
		key text NOT NULL,
		fingerprint text NOT NULL,
		completed boolean NOT NULL DEFAULT false,
		lease_until timestamptz NOT NULL,
		expires_at timestamptz NOT NULL,
		status integer,
		content_type text,
		body text,
		-- Where each stored file's base64 goes in the body of an inline answer.
		inline_files jsonb,
		UNIQUE (api_key_id, key)
	);
	CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
	-- The files an answer points at, rows of their own: deleting a file finds its answers by file id, not by a scan.
	CREATE TABLE idempotency_files (
		answer_id bigint NOT NULL REFERENCES idempotency_keys (id) ON DELETE CASCADE,
		position integer NOT NULL,
		file_id text NOT NULL,
		PRIMARY KEY (answer_id, position)
	);
	CREATE INDEX idempotency_files_by_file ON idempotency_files (file_id);
`;

// One line per generation and exact totals per key, day and model, added to in the statement that
// inserts the lines. Money in whole micro-dollars. The day is YYYY-MM-DD text and models compare
// byte by byte ("C"), as the embedded ledger compares them.
const USAGE = `
	CREATE TABLE usage_lines (
		request_id text PRIMARY KEY,
		api_key_id text NOT NULL,
		model text COLLATE "C" NOT NULL,
		images integer NOT NULL,
		-- Whole seconds of video made (0 on a line of images).
		seconds integer NOT NULL DEFAULT 0,
		at timestamptz NOT NULL,
		-- The provider that served the generation (fallback chains).
		provider text,
		cost_micros bigint NOT NULL
	);
	CREATE TABLE usage_days (
		api_key_id text NOT NULL,
		day text COLLATE "C" NOT NULL,
		model text COLLATE "C" NOT NULL,
		images bigint NOT NULL,
		seconds bigint NOT NULL DEFAULT 0,
		cost_micros bigint NOT NULL,
		PRIMARY KEY (api_key_id, day, model)
	);
`;

const KEYS = `
	CREATE TABLE api_keys (
		id text PRIMARY KEY,
		name text NOT NULL,
		prefix text NOT NULL,
		-- Hex SHA-256 of the secret: the secret itself is never stored.
		secret_hash text NOT NULL UNIQUE,
		previous_secret_hash text,
		previous_valid_until timestamptz,
		created_at timestamptz NOT NULL,
		expires_at timestamptz,
		blocked boolean NOT NULL DEFAULT false,
		revoked_at timestamptz,
		models text[],
		rate_limit_per_minute integer,
		budget_period text,
		budget_limit_micros bigint
	);
	CREATE INDEX api_keys_previous_secret_hash ON api_keys (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL;

	-- Spend per key and UTC day, generations in flight included (reserved when admitted,
	-- released when they fail): a budget period sums at most a month of rows (all of a key's
	-- days for a total budget), however many generations it holds. Reservations lock the key's
	-- api_keys row (keys/budget-reservations.ts).
	CREATE TABLE key_spend_days (
		key_id text NOT NULL,
		day date NOT NULL,
		spent_micros bigint NOT NULL,
		PRIMARY KEY (key_id, day)
	);
`;

// The same table and statements as the embedded engine (limits/bucket-rows.ts): any bucket name,
// not only a key's; the time in unix milliseconds, the refill computed from it in SQL.
const RATE_LIMITS = `
	CREATE TABLE rate_limit_buckets (
		bucket text PRIMARY KEY,
		tokens double precision NOT NULL,
		allowed boolean NOT NULL,
		updated_ms bigint NOT NULL
	);
	CREATE INDEX rate_limit_buckets_by_age ON rate_limit_buckets (updated_ms);
	-- The time of a take the caller does not fix: the database's, the one clock every replica shares.
	CREATE FUNCTION imagegen_clock_ms() RETURNS bigint LANGUAGE sql VOLATILE
		AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
`;

// One row per generation, written before the provider is called and ended once; a running one is
// owned by the replica renewing its lease.
const JOBS = `
	CREATE TABLE generation_jobs (
		id text PRIMARY KEY,
		api_key_id text NOT NULL,
		model text NOT NULL,
		status text NOT NULL,
		request text NOT NULL,
		webhook_url text,
		provider text,
		host_job_id text,
		charged_micros bigint NOT NULL DEFAULT 0,
		result text,
		error text,
		created_at timestamptz NOT NULL,
		finished_at timestamptz,
		owner text,
		lease_until timestamptz
	);
	CREATE INDEX generation_jobs_by_key ON generation_jobs (api_key_id, created_at);
	CREATE INDEX generation_jobs_running ON generation_jobs (lease_until) WHERE status = 'running';
	CREATE INDEX generation_jobs_by_end ON generation_jobs (finished_at) WHERE finished_at IS NOT NULL;
	-- The operator's list of every key's newest jobs reads them by age instead of sorting the table.
	CREATE INDEX generation_jobs_by_age ON generation_jobs (created_at, id);
`;

const WEBHOOKS = `
	-- Written once by whichever replica starts first (insert-if-absent, then read): every
	-- replica derives the same signing secret for a key.
	CREATE TABLE service_secrets (
		name text PRIMARY KEY,
		secret bytea NOT NULL
	);
	-- One row per delivery, its body fixed at enqueue (every attempt sends the same bytes
	-- under the same id). next_attempt_at (Unix ms) is also the lease of a claimed row,
	-- stamped with claim_token; a delivery is deleted once received, one given up stays
	-- 'failed' until the retention sweeps it. origin is the receiver's (new URL(url).origin,
	-- written at enqueue), which a claim caps the attempts by.
	CREATE TABLE webhook_outbox (
		id text PRIMARY KEY,
		url text NOT NULL,
		signing_key_id text,
		body text NOT NULL,
		event_type text NOT NULL,
		created_at bigint NOT NULL,
		attempts integer NOT NULL DEFAULT 0,
		state text NOT NULL DEFAULT 'pending',
		next_attempt_at bigint NOT NULL,
		claim_token text,
		last_error text,
		finished_at bigint,
		origin text NOT NULL
	);
	-- A claim passes over the due deliveries of a full receiver by reading the index alone.
	CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, origin, signing_key_id, created_at, id) WHERE state = 'pending';
	CREATE INDEX webhook_outbox_failed ON webhook_outbox (finished_at) WHERE state = 'failed';
	-- An alert once per key, period and kind, whichever replica charged the crossing.
	CREATE TABLE budget_alerts (
		key_id text NOT NULL,
		period text NOT NULL,
		kind text NOT NULL,
		sent_at bigint NOT NULL,
		PRIMARY KEY (key_id, period, kind)
	);
`;

// What a watermark's payload names: one row per marked image, keyed by the payload as 16 hex
// digits, written once, kept to expires_at (the file's retention plus --provenance-record-days).
const PROVENANCE = `
	CREATE TABLE provenance_records (
		id text PRIMARY KEY,
		generation_id text NOT NULL,
		model text NOT NULL,
		api_key_id text NOT NULL,
		-- Hex SHA-256 of the image as hosted.
		content_hash text NOT NULL,
		-- Only with --provenance-include-prompt.
		prompt text,
		created_at timestamptz NOT NULL,
		expires_at timestamptz NOT NULL
	);
	CREATE INDEX provenance_records_by_expiry ON provenance_records (expires_at);
`;

export const MIGRATIONS: readonly Migration[] = [
	{ version: 1, name: 'the schema: files, idempotency, usage, keys, rate limits, jobs, webhooks, provenance records', sql: [FILES, IDEMPOTENCY, USAGE, KEYS, RATE_LIMITS, JOBS, WEBHOOKS, PROVENANCE].join('') },
];
