/**
 * The one interface every store is written against: keys, usage, idempotency, jobs, the outbox,
 * files and limits each have one store class, which runs here on the data dir's SQLite database
 * (sqlite/sqlite-adapter.ts) or on PostgreSQL (postgres/postgres-adapter.ts).
 *
 * Statements use PostgreSQL's numbered parameters (`$1`, `$2`, …) on both engines; values are
 * passed as JavaScript values (Dates, booleans, arrays) and each adapter binds them as its driver
 * needs. Rows come back as the driver gives them (PostgreSQL: Dates and bigint as text; SQLite:
 * unix milliseconds and numbers): each store's row reader accepts both.
 *
 * Where the engines' SQL cannot be one text, a store picks by `dialect`; what is an engine's own
 * (the commit thread and busy handling of SQLite, the pool of PostgreSQL) stays inside its adapter.
 */

export type Dialect = 'sqlite' | 'postgres';

/** One statement of a write. */
export interface SqlStatement {
	sql: string;
	values?: readonly unknown[];
	/** Answer the row (`row`) or every row (`rows`) the statement returns (RETURNING) instead of `{ changes }`. */
	returns?: 'row' | 'rows';
	/** Run only when the statement before it changed a row (or, with `returns`, answered one). */
	ifChanged?: boolean;
	/**
	 * Run only when the write's first statement changed a row (or, with `returns`, answered one):
	 * what goes with a conditional change, in its transaction (a job's end and what it decides).
	 */
	ifFirstChanged?: boolean;
}

export interface Changes {
	changes: number;
}

/** Whether a statement's answer counts as a change for `ifChanged` / `ifFirstChanged`: rows changed, or a row answered. */
export function changedSomething(answer: unknown): boolean {
	if (answer === undefined || answer === null) return false;
	if (Array.isArray(answer)) return answer.length > 0;
	return typeof (answer as Partial<Changes>).changes === 'number' ? (answer as Changes).changes > 0 : true;
}

export interface SqlReader {
	/** The first row the query answers, if any. */
	one<Row>(sql: string, values?: readonly unknown[]): Promise<Row | undefined>;
	all<Row>(sql: string, values?: readonly unknown[]): Promise<Row[]>;
}

/** Statements inside `transaction`: they see, and hold, what the transaction has done so far. */
export interface SqlTransaction extends SqlReader {
	run(sql: string, values?: readonly unknown[]): Promise<Changes>;
}

export interface WriteOptions {
	/**
	 * True (the default): answered once the write is on the disk. False: once committed (visible to
	 * every process), for rows whose loss in a power cut a restart repairs; the next durable write
	 * takes it to the disk. PostgreSQL commits every write durably.
	 */
	durable?: boolean;
}

export interface SqlAdapter extends SqlReader {
	readonly dialect: Dialect;
	/**
	 * Runs the statements in order as one transaction and answers the last one's answer (a statement
	 * skipped by `ifChanged` or `ifFirstChanged` leaves the one before it): `{ changes }`, or rows with `returns`. Writes
	 * that arrive together may share a commit (SQLite's commit thread); each still succeeds or fails alone.
	 */
	write<Answer = Changes>(statements: readonly SqlStatement[], options?: WriteOptions): Promise<Answer>;
	/**
	 * Runs `work` in one transaction that holds the write lock (SQLite) or the rows it locks
	 * (PostgreSQL: `SELECT … FOR UPDATE`, see `forUpdate`): the place for a rule that reads, decides
	 * and writes, such as a budget admission. `work` must only await the transaction's own statements.
	 */
	transaction<T>(work: (transaction: SqlTransaction) => Promise<T>): Promise<T>;
	/** What a SELECT inside `transaction` ends with to lock the rows it reads (SQLite's transaction holds the whole database). */
	readonly forUpdate: string;
	/** The clock every process on this database shares (PostgreSQL: the server's; SQLite: this machine's). */
	now(): Promise<Date>;
	/**
	 * That clock read without the database, in unix milliseconds, where this process has it (SQLite:
	 * this machine's clock is the shared one); undefined where statements must read it themselves
	 * (PostgreSQL's `now()`).
	 */
	readonly processClock?: () => number;
	/** After a sweep deleted many rows: gives the space back where the engine does not itself (SQLite's free pages). */
	reclaimSpace(): Promise<void>;
	/** Told of every failed request: the embedded database learns of a full disk or a damaged page. */
	noteFailure(error: unknown): void;
	/** An embedded database's own state beyond reachable (SQLite's: out of room, or a page found damaged); a server database has none. */
	readonly condition?: { current(): { state: 'ok' | 'full' | 'damaged' } };
	/** Waits for every write handed in, then closes the engine's connections. */
	close(): Promise<void>;
}
