/** State that belongs to one SQLite connection rather than to one store. */
import type { SqliteDatabase } from './database';

/**
 * `create` once per connection: what every store writing through one connection must share (its
 * group commit, its condition), kept as long as the connection is.
 */
export function onePerConnection<T>(create: (database: SqliteDatabase) => T): (database: SqliteDatabase) => T {
	const made = new WeakMap<SqliteDatabase, T>();
	return (database) => {
		if (!made.has(database)) made.set(database, create(database));
		return made.get(database)!;
	};
}
