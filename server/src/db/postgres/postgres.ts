/**
 * The PostgreSQL connection of a replica (`--database-url`): one pool shared by every store. Opening it brings the
 * schema up to date, so a replica never serves against a schema it does not know.
 */
import { Pool } from 'pg';
import { migrate } from './migrate';
import { PostgresAdapter } from './postgres-adapter';

interface DatabaseLog {
	info(details: object, message: string): void;
	error(details: object, message: string): void;
}

/** The replica's database: its pool, and the stores' adapter on it. Close the stores that use it first. */
export type Database = PostgresAdapter;

interface DatabaseOptions {
	log?: DatabaseLog;
	/** Connections per replica. */
	maxConnections?: number;
	/** Giving up on opening a connection (an unreachable or hung server). */
	connectTimeoutMs?: number;
	/**
	 * Longest a statement may run, enforced by the server (`statement_timeout`) and by the client
	 * (`query_timeout`, for a connection that stopped answering), and the longest a connection may
	 * sit idle inside a transaction: a hung database fails requests with a 503 instead of holding them.
	 */
	statementTimeoutMs?: number;
}

/** Sane defaults: every statement of ours takes milliseconds; a sweep batch or a migration, seconds. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;

export async function openDatabase(url: string, options: DatabaseOptions = {}): Promise<Database> {
	const where = describeDatabaseUrl(url);
	const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
	const pool = new Pool({
		connectionString: url,
		max: options.maxConnections ?? 10,
		connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
		statement_timeout: statementTimeoutMs,
		// The client's own limit fires only when the server cannot enforce its own (a dead link).
		query_timeout: statementTimeoutMs + 5_000,
		idle_in_transaction_session_timeout: statementTimeoutMs,
		application_name: 'imagegen-server',
	});
	// Without a listener, a connection dropped while idle (a database restart) would end the process.
	// Only the reason: the error carries the client, whose fields include its cancel key.
	pool.on('error', (error) => options.log?.error({ reason: error.message, code: (error as { code?: unknown }).code }, 'PostgreSQL connection lost'));
	try {
		await migrate(pool, options.log);
	} catch (error) {
		await pool.end().catch(() => undefined);
		const reason = withoutPassword(error instanceof Error ? error.message : String(error), url);
		throw new Error(`--database-url: cannot use the PostgreSQL database ${where}: ${reason}`, { cause: error });
	}
	return new PostgresAdapter(pool);
}

/** `user@host:port/database` for messages: never the password, never the query string. */
function describeDatabaseUrl(url: string): string {
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		throw new Error('--database-url must be a URL such as postgres://user:password@host:5432/database');
	}
	if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
		throw new Error(`--database-url must start with postgres:// or postgresql://; got ${parsed.protocol}//`);
	}
	const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
	return `${user}${parsed.host || 'localhost'}${parsed.pathname}`;
}

function withoutPassword(text: string, url: string): string {
	const password = decodeURIComponent(new URL(url).password);
	return password ? text.split(password).join('***') : text;
}
