/**
 * A PostgreSQL database written by the schema before micro-dollars (usage_entries and spend in
 * numeric USD) is upgraded by migration 7: every usage report reads as it did, each stored amount
 * is rounded to the nearest micro-dollar (half up), spend and limits are kept, and admission runs on
 * the new amounts.
 */
import { Pool } from 'pg';
import { migrate } from '../../../../server/src/db/postgres/migrate';
import { MIGRATIONS } from '../../../../server/src/db/postgres/migrations';
import { openDatabase, type Database } from '../../../../server/src/db/postgres/postgres';
import { PgKeyStore } from '../../../../server/src/keys/pg-key-store';
import { PgUsageLedger } from '../../../../server/src/usage/pg-usage-ledger';
import { expectBudgetKept, UPGRADED_DAYS, UPGRADED_LINES } from '../../support/money-upgrade';
import { usePostgresCluster } from '../../support/postgres';

const postgres = usePostgresCluster();

const log = { error: () => undefined, info: () => undefined };

async function writeWithSchema6(url: string): Promise<unknown[]> {
	const pool = new Pool({ connectionString: url });
	try {
		await migrate(pool, undefined, MIGRATIONS.filter((step) => step.version <= 6));
		await pool.query(
			`INSERT INTO usage_entries (request_id, api_key_id, day, model, images, cost_usd, at) VALUES
			-- $0.0000015 three times: each line rounds to 2 µ$, the day's exact 0.0000045 to 5 µ$.
			('r1', 'key-a', '2030-03-10', 'p-image', 1, 0.0000015, '2030-03-10T08:00:00Z'),
			('r2', 'key-a', '2030-03-10', 'p-image', 1, 0.0000015, '2030-03-10T09:00:00Z'),
			('r3', 'key-a', '2030-03-10', 'p-image', 1, 0.0000015, '2030-03-10T10:00:00Z'),
			('r4', 'key-a', '2030-03-10', 'textimage-v2', 1, 0.0123456789, '2030-03-10T11:00:00Z'),
			('r5', 'key-a', '2030-03-10', 'textimage-v2', 1, 0.000000499999, '2030-03-10T12:00:00Z'),
			('r6', 'key-a', '2030-03-11', 'p-image', 2, 0.007, '2030-03-11T00:00:00Z')`,
		);
		await pool.query(`INSERT INTO api_keys (id, name, prefix, secret_hash, created_at, budget_limit_usd, budget_period) VALUES ('key-a', 'a', 'igk_a', 'hash-a', now(), 0.0105, 'total')`);
		await pool.query(`INSERT INTO key_spend_days (key_id, day, spent_usd) VALUES ('key-a', '2030-03-10', 0.007)`);
		// The answer of the ledger before the upgrade.
		const { rows } = await pool.query<{ day: string; model: string; images: string; cost_usd: string }>(
			`SELECT day, model, sum(images) AS images, round(sum(cost_usd), 6) AS cost_usd FROM usage_entries WHERE api_key_id = 'key-a' GROUP BY day, model ORDER BY day, model`,
		);
		return rows.map((row) => ({ date: row.day, model: row.model, images: Number(row.images), cost_usd: Number(row.cost_usd) }));
	} finally {
		await pool.end();
	}
}

it('reports what it reported, in micro-dollars rounded half up, and keeps spend and limits', async () => {
	const url = await postgres.createDatabase();
	const before = await writeWithSchema6(url);
	const database: Database = await openDatabase(url);
	try {
		const ledger = new PgUsageLedger(database.pool, { log });
		expect(await ledger.rows('key-a')).toEqual(before);
		expect(before).toEqual(UPGRADED_DAYS);
		const { rows: lines } = await database.pool.query('SELECT request_id, cost_micros::integer AS micros FROM usage_lines ORDER BY request_id');
		expect(lines.map((line) => [line.request_id, line.micros])).toEqual(UPGRADED_LINES);
		// A line recorded after the upgrade adds to the upgraded day total.
		await ledger.record({ requestId: 'r7', apiKeyId: 'key-a', model: 'p-image', images: 1, costUsd: 0.0035, at: new Date('2030-03-11T01:00:00Z') });
		expect((await ledger.rows('key-a', '2030-03-11'))[0]).toEqual({ date: '2030-03-11', model: 'p-image', images: 3, cost_usd: 0.0105 });
		await ledger.close();

		await expectBudgetKept(new PgKeyStore(database.pool));
	} finally {
		await database.close();
	}
});
