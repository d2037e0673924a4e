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
		name: 'managed keys and their budget charges',
		sql: `
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
				budget_limit_usd numeric,
				budget_period text
			);
			CREATE INDEX api_keys_previous_secret_hash ON api_keys (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL;

			-- Spend per key and UTC day, generations in flight included (charged when admitted,
			-- refunded when they fail): a budget period sums at most a month of rows (all of a key's
			-- days for a total budget), however many generations it holds.
			CREATE TABLE key_spend_days (
				key_id text NOT NULL,
				day date NOT NULL,
				spent_usd numeric NOT NULL,
				PRIMARY KEY (key_id, day)
			);

			-- Budget admission in one statement: the key's row lock is held only while PostgreSQL runs
			-- this, never across a round trip to a busy replica. Each statement of a volatile function
			-- takes a fresh snapshot, so the sum after the lock sees every admission committed before it.
			-- A replica sends the admissions waiting for one key together; they are decided in order,
			-- each counting those admitted before it, and charged to p_day in one row update.
			CREATE FUNCTION imagegen_admit_charges(p_key_id text, p_amounts numeric[], p_limit numeric, p_since date, p_day date)
			RETURNS TABLE (ordinal integer, admitted boolean, spent numeric)
			LANGUAGE plpgsql VOLATILE AS $$
			DECLARE
				v_spent numeric;
				v_charged numeric := 0;
			BEGIN
				PERFORM 1 FROM api_keys WHERE id = p_key_id FOR UPDATE;
				SELECT COALESCE(sum(spent_usd), 0) INTO v_spent FROM key_spend_days WHERE key_id = p_key_id AND day >= p_since;
				FOR i IN 1 .. COALESCE(array_length(p_amounts, 1), 0) LOOP
					ordinal := i;
					spent := v_spent;
					admitted := v_spent + p_amounts[i] <= p_limit;
					IF admitted THEN
						v_spent := v_spent + p_amounts[i];
						v_charged := v_charged + p_amounts[i];
					END IF;
					RETURN NEXT;
				END LOOP;
				IF v_charged > 0 THEN
					INSERT INTO key_spend_days AS spend (key_id, day, spent_usd) VALUES (p_key_id, p_day, v_charged)
					ON CONFLICT (key_id, day) DO UPDATE SET spent_usd = spend.spent_usd + EXCLUDED.spent_usd;
				END IF;
			END
			$$;
		`,
	},
	{
		version: 3,
		name: 'the provider that served each generation',
		sql: `
			-- NULL on rows written before fallback chains existed.
			ALTER TABLE usage_entries ADD COLUMN provider text;
		`,
	},
	{
		version: 4,
		name: 'idempotent answers know the files they point at',
		sql: `
			ALTER TABLE idempotency_keys ADD COLUMN file_ids text[] NOT NULL DEFAULT '{}';
			-- Deleting a file forgets the answers that point at it: found by file id, not by a scan.
			CREATE INDEX idempotency_keys_file_ids ON idempotency_keys USING gin (file_ids);
		`,
	},
	{
		version: 5,
		name: 'what each file says about its provenance',
		sql: `
			-- NULL on files stored before provenance was recorded: answered as no manifest.
			ALTER TABLE files ADD COLUMN provenance jsonb;
		`,
	},
	{
		version: 6,
		name: 'idempotent answers keep their inline images as stored files',
		sql: `
			-- Where each stored file's base64 goes in the body of an inline answer; NULL on rows
			-- written before, whose bodies hold their images and are replayed as they are.
			ALTER TABLE idempotency_keys ADD COLUMN inline_files jsonb;
		`,
	},
	{
		version: 7,
		name: 'money in micro-dollars; usage lines and day totals as on the data dir',
		sql: `
			-- The same tables as the embedded engine: one line per generation and exact totals per key,
			-- day and model, added to in the statement that inserts the lines. Money in whole
			-- micro-dollars, rounded half up from the exact numeric; day totals from their exact sums,
			-- so every /v1/usage answer reads as it did (it rounded those sums the same way).
			CREATE TABLE usage_days (
				api_key_id text NOT NULL,
				day text COLLATE "C" NOT NULL,
				model text COLLATE "C" NOT NULL,
				images bigint NOT NULL,
				cost_micros bigint NOT NULL,
				PRIMARY KEY (api_key_id, day, model)
			);
			INSERT INTO usage_days (api_key_id, day, model, images, cost_micros)
				SELECT api_key_id, day, model, sum(images), round(sum(cost_usd) * 1000000) FROM usage_entries GROUP BY api_key_id, day, model;
			DROP INDEX usage_entries_key_day;
			ALTER TABLE usage_entries RENAME TO usage_lines;
			ALTER TABLE usage_lines ADD COLUMN cost_micros bigint;
			UPDATE usage_lines SET cost_micros = round(cost_usd * 1000000);
			ALTER TABLE usage_lines ALTER COLUMN cost_micros SET NOT NULL, DROP COLUMN cost_usd, DROP COLUMN day;

			ALTER TABLE key_spend_days ADD COLUMN spent_micros bigint;
			UPDATE key_spend_days SET spent_micros = round(spent_usd * 1000000);
			ALTER TABLE key_spend_days ALTER COLUMN spent_micros SET NOT NULL, DROP COLUMN spent_usd;
			ALTER TABLE api_keys ADD COLUMN budget_limit_micros bigint;
			UPDATE api_keys SET budget_limit_micros = round(budget_limit_usd * 1000000);
			ALTER TABLE api_keys DROP COLUMN budget_limit_usd;

			-- Migration 2's admission, in micro-dollars.
			DROP FUNCTION imagegen_admit_charges(text, numeric[], numeric, date, date);
			CREATE FUNCTION imagegen_admit_charges(p_key_id text, p_amounts bigint[], p_limit bigint, p_since date, p_day date)
			RETURNS TABLE (ordinal integer, admitted boolean, spent bigint)
			LANGUAGE plpgsql VOLATILE AS $$
			DECLARE
				v_spent bigint;
				v_charged bigint := 0;
			BEGIN
				PERFORM 1 FROM api_keys WHERE id = p_key_id FOR UPDATE;
				SELECT COALESCE(sum(spent_micros), 0) INTO v_spent FROM key_spend_days WHERE key_id = p_key_id AND day >= p_since;
				FOR i IN 1 .. COALESCE(array_length(p_amounts, 1), 0) LOOP
					ordinal := i;
					spent := v_spent;
					admitted := v_spent + p_amounts[i] <= p_limit;
					IF admitted THEN
						v_spent := v_spent + p_amounts[i];
						v_charged := v_charged + p_amounts[i];
					END IF;
					RETURN NEXT;
				END LOOP;
				IF v_charged > 0 THEN
					INSERT INTO key_spend_days AS spend (key_id, day, spent_micros) VALUES (p_key_id, p_day, v_charged)
					ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = spend.spent_micros + EXCLUDED.spent_micros;
				END IF;
			END
			$$;
		`,
	},
	{
		version: 8,
		name: 'rate limit buckets as on the data dir',
		sql: `
			-- The same table and statements as the embedded engine (limits/bucket-rows.ts): any bucket
			-- name, not only a key's; the time in unix milliseconds, the refill computed from it in SQL.
			ALTER TABLE rate_limit_buckets RENAME COLUMN api_key_id TO bucket;
			ALTER TABLE rate_limit_buckets ADD COLUMN updated_ms bigint;
			UPDATE rate_limit_buckets SET updated_ms = floor(extract(epoch FROM updated_at) * 1000);
			ALTER TABLE rate_limit_buckets ALTER COLUMN updated_ms SET NOT NULL, DROP COLUMN updated_at;
			CREATE INDEX rate_limit_buckets_by_age ON rate_limit_buckets (updated_ms);
			-- The time of a take the caller does not fix: the database's, the one clock every replica shares.
			CREATE FUNCTION imagegen_clock_ms() RETURNS bigint LANGUAGE sql VOLATILE
				AS $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
		`,
	},
	{
		version: 9,
		name: 'generations as jobs',
		sql: `
			-- As on the data dir (sqlite/migrations.ts): one row per generation, written before the
			-- provider is called and ended once; a running one is owned by the replica renewing its lease.
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
		`,
	},
	{
		version: 10,
		name: 'webhooks: the service secret, the outbox and budget alerts sent',
		sql: `
			-- Written once by whichever replica starts first (insert-if-absent, then read): every
			-- replica derives the same signing secret for a key.
			CREATE TABLE service_secrets (
				name text PRIMARY KEY,
				secret bytea NOT NULL
			);
			-- One row per delivery, its body fixed at enqueue (every attempt sends the same bytes
			-- under the same id). next_attempt_at (Unix ms) is also the lease of a claimed row,
			-- stamped with claim_token; a delivery is deleted once received, one given up stays
			-- 'failed' until the retention sweeps it.
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
				finished_at bigint
			);
			CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE state = 'pending';
			CREATE INDEX webhook_outbox_failed ON webhook_outbox (finished_at) WHERE state = 'failed';
			-- An alert once per key, period and kind, whichever replica charged the crossing.
			CREATE TABLE budget_alerts (
				key_id text NOT NULL,
				period text NOT NULL,
				kind text NOT NULL,
				sent_at bigint NOT NULL,
				PRIMARY KEY (key_id, period, kind)
			);
		`,
	},
	{
		version: 11,
		name: 'webhook receivers by origin; jobs by age',
		sql: `
			-- Each delivery's receiver host (new URL(url).origin, written at enqueue), which a claim
			-- caps the attempts by; rows from before are filled from their URL, lower-cased.
			ALTER TABLE webhook_outbox ADD COLUMN origin text;
			UPDATE webhook_outbox SET origin = lower(coalesce(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*'), url));
			ALTER TABLE webhook_outbox ALTER COLUMN origin SET NOT NULL;
			-- A claim passes over the due deliveries of a full receiver by reading the index alone.
			DROP INDEX webhook_outbox_due;
			CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, origin, signing_key_id, created_at, id) WHERE state = 'pending';
			-- The operator's list of every key's newest jobs reads them by age instead of sorting the table.
			CREATE INDEX generation_jobs_by_age ON generation_jobs (created_at, id);
		`,
	},
];
