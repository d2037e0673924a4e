/**
 * The embedded database's schema as an ordered list of steps, as for PostgreSQL
 * (postgres/migrations.ts). Step 1 is the baseline: the whole schema of the first release. A
 * released step is never edited: a change is a new step at the end. Each domain's tables are
 * written beside the others here so the whole schema reads in one place.
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
		-- JSON: what the file says about its marks (docs/provenance.md); NULL answers as none.
		provenance TEXT,
		sweep_token TEXT,
		sweep_until INTEGER
	) WITHOUT ROWID;
	CREATE INDEX files_by_expiry ON files (expires_at);
	CREATE INDEX files_reserved ON files (writer_pid) WHERE published = 0;
`;

// The answer body is a BLOB in the row, read only for a replay; an inline (`b64_json`) answer is
// remembered without its images: where each stored file's base64 goes in the body (JSON,
// `StoredAnswer.inlineFiles`). The ids of the files an answer points at are rows of their own, so
// deleting a file finds its answers through an index.
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
		inline_files TEXT,
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

/**
 * One row per generation (the request id keeps a retried record from counting twice) and exact
 * per-day totals kept in the same transaction, so a usage report reads a few rows per day however
 * many generations there were. Money in whole micro-dollars, as on PostgreSQL; seconds are whole
 * seconds of video (0 on a line of images).
 */
const USAGE = `
	CREATE TABLE usage_lines (
		request_id TEXT PRIMARY KEY,
		at INTEGER NOT NULL,
		api_key_id TEXT NOT NULL,
		model TEXT NOT NULL,
		images INTEGER NOT NULL,
		seconds INTEGER NOT NULL DEFAULT 0,
		cost_micros INTEGER NOT NULL,
		provider TEXT
	) STRICT;
	CREATE TABLE usage_days (
		api_key_id TEXT NOT NULL,
		day TEXT NOT NULL,
		model TEXT NOT NULL,
		images INTEGER NOT NULL,
		seconds INTEGER NOT NULL DEFAULT 0,
		cost_micros INTEGER NOT NULL,
		PRIMARY KEY (api_key_id, day, model)
	) STRICT, WITHOUT ROWID;
`;

/**
 * Managed keys (secrets only as SHA-256) and their spend per UTC day in integer micro-dollars,
 * generations in flight included (reserved when admitted, released when they fail): a budget
 * period sums at most a month of rows, however many generations it holds.
 */
const KEYS = `
	CREATE TABLE api_keys (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		prefix TEXT NOT NULL,
		secret_hash TEXT NOT NULL UNIQUE,
		previous_secret_hash TEXT,
		previous_valid_until INTEGER,
		created_at INTEGER NOT NULL,
		expires_at INTEGER,
		blocked INTEGER NOT NULL DEFAULT 0,
		revoked_at INTEGER,
		models TEXT,
		rate_limit_per_minute INTEGER,
		budget_period TEXT,
		budget_limit_micros INTEGER
	) STRICT;
	CREATE INDEX api_keys_previous_secret ON api_keys (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL;
	CREATE TABLE key_spend_days (
		key_id TEXT NOT NULL,
		day TEXT NOT NULL,
		spent_micros INTEGER NOT NULL,
		PRIMARY KEY (key_id, day)
	) STRICT, WITHOUT ROWID;
`;

/**
 * One token bucket per API key or client address (failed authentication), shared by every process
 * on the data dir, in PostgreSQL's shape so both engines run the same statements
 * (limits/bucket-rows.ts): the time in unix milliseconds, and whether the last take was admitted,
 * which only that take's answer reads. Buckets untouched for a minute are full and are deleted by
 * their age.
 */
const RATE_LIMITS = `
	CREATE TABLE rate_limit_buckets (
		bucket TEXT PRIMARY KEY,
		tokens REAL NOT NULL,
		allowed INTEGER NOT NULL,
		updated_ms INTEGER NOT NULL
	) STRICT, WITHOUT ROWID;
	CREATE INDEX rate_limit_buckets_by_age ON rate_limit_buckets (updated_ms);
`;

/**
 * Generations as jobs (jobs/job-store.ts): one row each, written before the provider is called and
 * ended once; a running one is owned by the process renewing its lease. Request, result and error
 * are JSON text; an inline answer's images are stored files, named in `result`, never in it. The
 * operator's list of every key's newest jobs reads them by age instead of sorting the table.
 */
const JOBS = `
	CREATE TABLE generation_jobs (
		id TEXT PRIMARY KEY,
		api_key_id TEXT NOT NULL,
		model TEXT NOT NULL,
		status TEXT NOT NULL,
		request TEXT NOT NULL,
		webhook_url TEXT,
		provider TEXT,
		host_job_id TEXT,
		charged_micros INTEGER NOT NULL DEFAULT 0,
		result TEXT,
		error TEXT,
		created_at INTEGER NOT NULL,
		finished_at INTEGER,
		owner TEXT,
		lease_until INTEGER
	) STRICT;
	CREATE INDEX generation_jobs_by_key ON generation_jobs (api_key_id, created_at);
	CREATE INDEX generation_jobs_running ON generation_jobs (lease_until) WHERE status = 'running';
	CREATE INDEX generation_jobs_by_end ON generation_jobs (finished_at) WHERE finished_at IS NOT NULL;
	CREATE INDEX generation_jobs_by_age ON generation_jobs (created_at, id);
`;

/**
 * Webhooks (docs/api.md, "Webhooks"). The service secret every key's signing secret is derived from:
 * written once by whichever process starts first (insert-if-absent, then read), so every process
 * and restart signs alike. The outbox: one row per delivery, its body fixed at enqueue so every
 * attempt sends the same bytes under the same id; `origin` is the receiver's (`new URL(url).origin`,
 * written at enqueue), which a claim caps the attempts by, passing over the due deliveries of a full
 * receiver by reading the index alone; `next_attempt_at` (Unix ms) is also the lease of a claimed
 * row, stamped with `claim_token`, so another process passes it by until it is due again.
 * A delivery is deleted once received; one given up stays `failed` until the retention sweeps it.
 * Budget alerts sent are rows of their own: the primary key makes an alert once per key, period
 * and kind.
 */
const WEBHOOKS = `
	CREATE TABLE service_secrets (
		name TEXT PRIMARY KEY,
		secret BLOB NOT NULL
	) STRICT, WITHOUT ROWID;
	CREATE TABLE webhook_outbox (
		id TEXT PRIMARY KEY,
		url TEXT NOT NULL,
		signing_key_id TEXT,
		body TEXT NOT NULL,
		event_type TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0,
		state TEXT NOT NULL DEFAULT 'pending',
		next_attempt_at INTEGER NOT NULL,
		claim_token TEXT,
		last_error TEXT,
		finished_at INTEGER,
		origin TEXT NOT NULL DEFAULT ''
	) STRICT;
	CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, origin, signing_key_id, created_at, id) WHERE state = 'pending';
	CREATE INDEX webhook_outbox_failed ON webhook_outbox (finished_at) WHERE state = 'failed';
	CREATE TABLE budget_alerts (
		key_id TEXT NOT NULL,
		period TEXT NOT NULL,
		kind TEXT NOT NULL,
		sent_at INTEGER NOT NULL,
		PRIMARY KEY (key_id, period, kind)
	) STRICT, WITHOUT ROWID;
`;

/**
 * What a watermark's payload names (provenance/provenance-records.ts): one row per marked image,
 * keyed by the payload as 16 hex digits, written once, kept to `expires_at` (the file's retention
 * plus --provenance-record-days) and swept by it.
 */
const PROVENANCE = `
	CREATE TABLE provenance_records (
		id TEXT PRIMARY KEY,
		generation_id TEXT NOT NULL,
		model TEXT NOT NULL,
		api_key_id TEXT NOT NULL,
		content_hash TEXT NOT NULL,
		prompt TEXT,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	) STRICT, WITHOUT ROWID;
	CREATE INDEX provenance_records_by_expiry ON provenance_records (expires_at);
`;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
	{ version: 1, name: 'the schema: files, idempotency, usage, keys, rate limits, jobs, webhooks, provenance records', sql: [FILES, IDEMPOTENCY, USAGE, KEYS, RATE_LIMITS, JOBS, WEBHOOKS, PROVENANCE].join('') },
];
