/**
 * The SQL adapter on the data dir's SQLite database. Reads run on the service's connection (WAL:
 * they never wait for a writer). Writes go to the group commit (group-commit.ts), off the event
 * loop, sharing a disk sync with the writes of the same moment. A transaction with rules of its
 * own runs on the service's connection behind BEGIN IMMEDIATE, waiting for another process's lock
 * from timers (busy.ts), one at a time in this process.
 */
import type { Changes, SqlAdapter, SqlStatement, SqlTransaction, WriteOptions } from '../sql-adapter';
import { whenUnlocked } from './busy';
import { conditionOf, type SqliteCondition } from './condition';
import { bindNumbered, statementCache, type SqliteDatabase, type SqliteStatement } from './database';
import { releaseFreePages } from './free-pages';
import { groupCommitOf, type SqliteGroupCommit } from './group-commit';

export class SqliteAdapter implements SqlAdapter {
	readonly dialect = 'sqlite' as const;
	readonly forUpdate = '';
	readonly processClock = (): number => Date.now();
	private readonly statement: (text: string) => SqliteStatement;
	private readonly commits: SqliteGroupCommit;
	readonly condition: SqliteCondition;
	/** The transaction under way on the service's connection: the next one starts after it. */
	private transactions: Promise<unknown> = Promise.resolve();
	private readonly inTransaction: SqlTransaction;

	constructor(readonly database: SqliteDatabase) {
		this.statement = statementCache(database);
		this.commits = groupCommitOf(database);
		this.condition = conditionOf(database);
		this.inTransaction = {
			one: async (sql, values) => this.readOne(sql, values),
			all: async (sql, values) => this.readAll(sql, values),
			run: async (sql, values): Promise<Changes> => ({ changes: this.statement(sql).run(bindNumbered(values ?? [])).changes }),
		};
	}

	/** Resolves once the commit thread has its connection, so that no request waits for it to load. */
	async start(): Promise<void> {
		await this.commits.start();
		this.condition.start();
	}

	async one<Row>(sql: string, values?: readonly unknown[]): Promise<Row | undefined> {
		return this.readOne<Row>(sql, values);
	}

	async all<Row>(sql: string, values?: readonly unknown[]): Promise<Row[]> {
		return this.readAll<Row>(sql, values);
	}

	write<Answer = Changes>(statements: readonly SqlStatement[], options: WriteOptions = {}): Promise<Answer> {
		return this.commits.write<Answer>(
			statements.map((statement) => ({
				sql: statement.sql,
				values: bindNumbered(statement.values ?? []),
				...(statement.returns === 'row' ? { row: true } : statement.returns === 'rows' ? { rows: true } : {}),
				...(statement.ifChanged ? { ifChanged: true } : {}),
				...(statement.ifFirstChanged ? { ifFirstChanged: true } : {}),
			})),
			options,
		);
	}

	transaction<T>(work: (transaction: SqlTransaction) => Promise<T>): Promise<T> {
		const run = this.transactions.then(() => this.runTransaction(work));
		this.transactions = run.catch(() => undefined);
		return run;
	}

	async now(): Promise<Date> {
		return new Date();
	}

	async reclaimSpace(): Promise<void> {
		await releaseFreePages(this.database);
	}

	noteFailure(error: unknown): void {
		this.condition.noteFailure(error);
	}

	async close(): Promise<void> {
		await this.transactions;
		await this.condition.stop();
		await this.commits.close();
		this.database.close();
	}

	private async runTransaction<T>(work: (transaction: SqlTransaction) => Promise<T>): Promise<T> {
		await whenUnlocked(this.database, () => this.database.exec('BEGIN IMMEDIATE'));
		try {
			const answer = await work(this.inTransaction);
			this.database.exec('COMMIT');
			this.condition.noteWritten();
			return answer;
		} catch (error) {
			if (this.database.inTransaction) this.database.exec('ROLLBACK');
			this.condition.noteFailure(error);
			throw error;
		}
	}

	private readOne<Row>(sql: string, values?: readonly unknown[]): Row | undefined {
		return this.statement(sql).get(bindNumbered(values ?? [])) as Row | undefined;
	}

	private readAll<Row>(sql: string, values?: readonly unknown[]): Row[] {
		return this.statement(sql).all(bindNumbered(values ?? [])) as Row[];
	}
}
