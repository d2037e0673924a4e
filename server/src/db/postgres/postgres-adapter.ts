/**
 * The SQL adapter on PostgreSQL, shared by every replica: one pool. A statement on its own runs on
 * any pooled connection; several, or a transaction with rules of its own, hold one connection
 * between BEGIN and COMMIT. Every text is prepared once per connection (a named statement), so a
 * store's hot statements are not parsed and planned on every call.
 */
import type { Pool, PoolClient, QueryConfig } from 'pg';
import { changedSomething, type Changes, type SqlAdapter, type SqlStatement, type SqlTransaction } from '../sql-adapter';
import { withConnection } from './connection';

const MAX_PREPARED = 1_000;

type Queryable = Pick<Pool | PoolClient, 'query'>;

export class PostgresAdapter implements SqlAdapter {
	readonly dialect = 'postgres' as const;
	readonly forUpdate = 'FOR UPDATE';
	/** A name per statement text, for PostgreSQL's prepared statements; bounded, should a store ever build texts from values. */
	private readonly names = new Map<string, string>();

	constructor(
		readonly pool: Pool,
		private readonly closePool: () => Promise<void> = () => pool.end(),
	) {}

	async one<Row>(sql: string, values?: readonly unknown[]): Promise<Row | undefined> {
		return (await this.query<Row>(this.pool, sql, values)).rows[0];
	}

	async all<Row>(sql: string, values?: readonly unknown[]): Promise<Row[]> {
		return (await this.query<Row>(this.pool, sql, values)).rows;
	}

	/** Every PostgreSQL commit is durable, so `options.durable` changes nothing here. */
	async write<Answer = Changes>(statements: readonly SqlStatement[]): Promise<Answer> {
		if (statements.length === 1) return this.answer(this.pool, statements[0]!) as Promise<Answer>;
		return withConnection(
			this.pool,
			async (client) => {
				let answer: unknown;
				let firstChanged = false;
				for (const [index, statement] of statements.entries()) {
					if ((statement.ifChanged && !changedSomething(answer)) || (statement.ifFirstChanged && !firstChanged)) continue;
					answer = await this.answer(client, statement);
					if (index === 0) firstChanged = changedSomething(answer);
				}
				return answer as Answer;
			},
			{ transaction: true },
		);
	}

	transaction<T>(work: (transaction: SqlTransaction) => Promise<T>): Promise<T> {
		return withConnection(
			this.pool,
			(client) =>
				work({
					one: async (sql, values) => (await this.query(client, sql, values)).rows[0],
					all: async (sql, values) => (await this.query(client, sql, values)).rows,
					run: async (sql, values) => ({ changes: (await this.query(client, sql, values)).rowCount ?? 0 }),
				} as SqlTransaction),
			{ transaction: true },
		);
	}

	async now(): Promise<Date> {
		return (await this.one<{ now: Date }>('SELECT now() AS now'))!.now;
	}

	async reclaimSpace(): Promise<void> {
		// PostgreSQL's autovacuum gives dead rows' space back to the table.
	}

	noteFailure(): void {
		// A failing PostgreSQL is reported by the pool and by the statements themselves.
	}

	close(): Promise<void> {
		return this.closePool();
	}

	private async answer(target: Queryable, statement: SqlStatement): Promise<unknown> {
		const result = await this.query(target, statement.sql, statement.values);
		if (statement.returns === 'row') return result.rows[0];
		if (statement.returns === 'rows') return result.rows;
		return { changes: result.rowCount ?? 0 };
	}

	private query<Row>(target: Queryable, text: string, values: readonly unknown[] = []) {
		let name = this.names.get(text);
		if (name === undefined && this.names.size < MAX_PREPARED) {
			name = `imagegen-${this.names.size + 1}`;
			this.names.set(text, name);
		}
		const config: QueryConfig = { ...(name === undefined ? {} : { name }), text, values: values as unknown[] };
		return target.query<Row & object>(config) as unknown as Promise<{ rows: Row[]; rowCount: number | null }>;
	}
}
