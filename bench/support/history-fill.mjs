// The history of a long-running service, written straight into the embedded database for the
// start-up bench (bench/history-startup.mjs). Every table shape the bench relies on is written
// here and nowhere else: when a migration changes one, this file changes with it.
//
// Rows are inserted in one transaction per table through one prepared statement, with the
// database's fsyncs off for the fill only: millions of rows take seconds, not hours.

/** The tables and columns the inserts below write. */
export const HISTORY_TABLES = {
	idempotency_keys: ['api_key_id', 'key', 'fingerprint', 'completed', 'lease_until', 'expires_at', 'status', 'content_type', 'body'],
	usage_entries: ['request_id', 'api_key_id', 'day', 'model', 'images', 'cost_usd', 'at'],
};

/** What the database lacks for the bench (e.g. "table usage_entries"); empty when it has all. */
export function missingHistoryColumns(database) {
	const missing = [];
	for (const [table, columns] of Object.entries(HISTORY_TABLES)) {
		const present = new Set(database.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table));
		if (present.size === 0) missing.push(`table ${table}`);
		else missing.push(...columns.filter((column) => !present.has(column)).map((column) => `${table}.${column}`));
	}
	return missing;
}

function insertAll(database, table, rows) {
	const columns = HISTORY_TABLES[table];
	const insert = database.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
	const previous = database.pragma('synchronous', { simple: true });
	database.pragma('synchronous = OFF');
	try {
		let count = 0;
		database.transaction(() => {
			for (const row of rows) {
				insert.run(row);
				count++;
			}
		})();
		return count;
	} finally {
		database.pragma(`synchronous = ${previous}`);
	}
}

/**
 * `records`: an iterable of completed answers `{ apiKeyId, key, fingerprint, expiresAtMs, status,
 * contentType, body }` (body: the answer's bytes). Answers how many were written.
 */
export function insertIdempotencyRecords(database, records) {
	return insertAll(database, 'idempotency_keys', mapIterable(records, (record) => [record.apiKeyId, record.key, record.fingerprint, 1, 0, record.expiresAtMs, record.status, record.contentType, record.body]));
}

/** `lines`: an iterable of `{ requestId, apiKeyId, atMs, model, images, costUsd }`. */
export function insertUsageLines(database, lines) {
	return insertAll(database, 'usage_entries', mapIterable(lines, (line) => [line.requestId, line.apiKeyId, new Date(line.atMs).toISOString().slice(0, 10), line.model, line.images, line.costUsd, line.atMs]));
}

function* mapIterable(items, map) {
	for (const item of items) yield map(item);
}
