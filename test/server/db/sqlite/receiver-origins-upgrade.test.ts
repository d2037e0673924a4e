/**
 * A data dir written before webhook deliveries kept their receiver's origin is upgraded by
 * migration 11: every pending delivery gets the origin of its URL (scheme and host lower-cased,
 * the port kept, path, query and fragment dropped), so the per-origin cap counts it with the
 * deliveries enqueued after.
 */
import Database from 'better-sqlite3';
import { migrateSqlite } from '../../../../server/src/db/sqlite/migrate';
import { SQLITE_MIGRATIONS } from '../../../../server/src/db/sqlite/migrations';
import { originOf } from '../../../../server/src/webhooks/outbox-store';

const URLS = ['https://Hooks.Example:8443/a/b?c=1', 'http://127.0.0.1:9000/hook', 'https://hooks.example?x=1', 'https://hooks.example#top', 'HTTP://[::1]:8080/x'];

it('each delivery from before gets the origin its URL has', () => {
	const database = new Database(':memory:');
	try {
		migrateSqlite(database, undefined, SQLITE_MIGRATIONS.filter((step) => step.version <= 10));
		const insert = database.prepare("INSERT INTO webhook_outbox (id, url, signing_key_id, body, event_type, created_at, next_attempt_at) VALUES (?, ?, 'key-a', '{}', 'generation.succeeded', 0, 0)");
		URLS.forEach((url, index) => insert.run(`msg_${index}`, url));
		migrateSqlite(database, undefined, SQLITE_MIGRATIONS);
		const rows = database.prepare('SELECT url, origin FROM webhook_outbox ORDER BY id').all() as Array<{ url: string; origin: string }>;
		expect(rows.map((row) => row.origin)).toEqual(URLS.map(originOf));
		expect(database.prepare("SELECT name FROM sqlite_master WHERE name = 'generation_jobs_by_age'").get()).toEqual({ name: 'generation_jobs_by_age' });
	} finally {
		database.close();
	}
});
