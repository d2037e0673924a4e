// The history of a long-running service, written straight into the embedded database for the
// start-up bench (bench/history-startup.mjs). Every table shape the bench relies on is written
// here and nowhere else: when a migration changes one, this file changes with it.
//
// Rows are inserted in one transaction per table through one prepared statement, with the
// database's fsyncs off for the fill only: millions of rows take seconds, not hours.

/** The tables and columns the inserts below write. */
export const HISTORY_TABLES = {
	idempotency_keys: ['api_key_id', 'key', 'fingerprint', 'completed', 'lease_until', 'expires_at', 'status', 'content_type', 'body'],
	usage_lines: ['request_id', 'at', 'api_key_id', 'model', 'images', 'cost_micros', 'provider'],
	usage_days: ['api_key_id', 'day', 'model', 'images', 'cost_micros'],
};

/** What the database lacks for the bench (e.g. "table usage_days"); empty when it has all. */
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

/**
 * `lines`: an iterable of `{ requestId, apiKeyId, atMs, model, images, costUsd }`. Each line also
 * adds to its key's day total, as the ledger does in the same transaction as the line.
 */
export function insertUsageLines(database, lines) {
	const days = new Map();
	const count = insertAll(
		database,
		'usage_lines',
		mapIterable(lines, (line) => {
			// Micro-dollars, as the ledger stores them (usage/usage-ledger.ts).
			const costMicros = Math.round(line.costUsd * 1e6);
			const day = new Date(line.atMs).toISOString().slice(0, 10);
			const total = `${line.apiKeyId}\u0000${day}\u0000${line.model}`;
			const sum = days.get(total) ?? { apiKeyId: line.apiKeyId, day, model: line.model, images: 0, costMicros: 0 };
			sum.images += line.images;
			sum.costMicros += costMicros;
			days.set(total, sum);
			return [line.requestId, line.atMs, line.apiKeyId, line.model, line.images, costMicros, 'sandbox'];
		}),
	);
	insertAll(database, 'usage_days', mapIterable(days.values(), (sum) => [sum.apiKeyId, sum.day, sum.model, sum.images, sum.costMicros]));
	return count;
}

function* mapIterable(items, map) {
	for (const item of items) yield map(item);
}
