/**
 * A data dir written by the schema before micro-dollars (usage in pico-dollars, budget limits in
 * REAL dollars, budgets held as leased reservations) is upgraded by migration 7: every usage report
 * reads as it did, each stored amount is rounded to the nearest micro-dollar (half up), the spend
 * and limits are kept, and a reservation still live at the upgrade is charged as spend.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteKeyStore } from '../../../../server/src/keys/sqlite-key-store';
import { migrateSqlite } from '../../../../server/src/db/sqlite/migrate';
import { SQLITE_MIGRATIONS } from '../../../../server/src/db/sqlite/migrations';
import { SqliteUsageLedger } from '../../../../server/src/usage/sqlite-usage-ledger';
import { expectBudgetKept, UPGRADED_DAYS, UPGRADED_LINES } from '../../support/money-upgrade';
import { useSqliteDataDir } from '../../support/sqlite-data-dir';

const dataDir = useSqliteDataDir('imagegen-money-upgrade-');
const log = { error: () => undefined, info: () => undefined };

/** The lines and day totals exactly as the pico-dollar ledger wrote them. */
const LINES: Array<[string, string, number, string, number, bigint]> = [
	// $0.0000015 three times: each line rounds to 2 µ$, but the day's exact 4,500,000 pico rounds to 5 µ$.
	['r1', '2030-03-10', Date.parse('2030-03-10T08:00:00Z'), 'p-image', 1, 1_500_000n],
	['r2', '2030-03-10', Date.parse('2030-03-10T09:00:00Z'), 'p-image', 1, 1_500_000n],
	['r3', '2030-03-10', Date.parse('2030-03-10T10:00:00Z'), 'p-image', 1, 1_500_000n],
	// $0.0123456789 → 12,346 µ$; 499,999 pico (under half a micro-dollar) → 0.
	['r4', '2030-03-10', Date.parse('2030-03-10T11:00:00Z'), 'textimage-v2', 1, 12_345_678_900n],
	['r5', '2030-03-10', Date.parse('2030-03-10T12:00:00Z'), 'textimage-v2', 1, 499_999n],
	['r6', '2030-03-11', Date.parse('2030-03-11T00:00:00Z'), 'p-image', 2, 7_000_000_000n],
];

function writeWithSchema6(file: string): void {
	const database = new Database(file);
	try {
		database.pragma('journal_mode = WAL');
		migrateSqlite(database, undefined, SQLITE_MIGRATIONS.filter((step) => step.version <= 6));
		const line = database.prepare('INSERT INTO usage_lines (request_id, at, api_key_id, model, images, cost_pico) VALUES (?, ?, ?, ?, ?, ?)');
		const day = database.prepare(
			`INSERT INTO usage_days (api_key_id, day, model, images, cost_pico) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (api_key_id, day, model) DO UPDATE SET images = images + excluded.images, cost_pico = cost_pico + excluded.cost_pico`,
		);
		for (const [id, date, at, model, images, pico] of LINES) {
			line.run(id, at, 'key-a', model, images, pico);
			day.run('key-a', date, model, images, pico);
		}
		database
			.prepare(`INSERT INTO api_keys (id, name, prefix, secret_hash, created_at, budget_limit_usd, budget_period) VALUES ('key-a', 'a', 'igk_a', 'hash-a', 0, 0.0105, 'total')`)
			.run();
		database.prepare(`INSERT INTO key_spend_days (key_id, day, spent_micros) VALUES ('key-a', '2030-03-10', 3500)`).run();
		const reservation = database.prepare('INSERT INTO key_reservations (id, key_id, at, micros, lease_until) VALUES (?, ?, ?, ?, ?)');
		reservation.run('live', 'key-a', Date.parse('2030-03-10T13:00:00Z'), 3500, Date.now() + 3_600_000);
		reservation.run('expired', 'key-a', Date.parse('2030-03-10T13:00:00Z'), 3500, Date.now() - 60_000);
	} finally {
		database.close();
	}
}

it('reports what it reported, in micro-dollars rounded half up, and keeps spend, limits and live reservations', async () => {
	writeWithSchema6(join(dataDir.path(), 'imagegen.db'));
	const database = dataDir.openDatabase();
	expect(database.pragma('user_version', { simple: true })).toBe(Math.max(...SQLITE_MIGRATIONS.map((step) => step.version)));

	const ledger = new SqliteUsageLedger(database, { log });
	// What the pico-dollar ledger answered: each day total rounded half up to the micro-dollar.
	expect(await ledger.rows('key-a')).toEqual(UPGRADED_DAYS);
	await ledger.close();
	expect(database.prepare('SELECT request_id, cost_micros FROM usage_lines ORDER BY request_id').raw().all()).toEqual(UPGRADED_LINES);

	// Spent: 3,500 settled + 3,500 of the live reservation; the expired one no longer counted and is gone.
	await expectBudgetKept(new SqliteKeyStore(database));
	expect(database.prepare("SELECT name FROM sqlite_schema WHERE name = 'key_reservations'").all()).toEqual([]);
});
