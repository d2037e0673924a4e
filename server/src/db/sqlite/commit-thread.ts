/**
 * The thread that commits every group (sqlite/group-commit.ts) of this process: one worker, with a
 * connection of its own per database it is sent. A worker is costly to start (an isolate, the
 * driver's addon, the file opened); with one per connection, every data dir a test, a command or
 * an embedding opened paid that again. The service has one database, so its groups are
 * committed as before; two databases in one process take turns on the thread.
 *
 * The worker is held open (ref) only while a group waits for its answer, and ends a second after
 * its last connection closed. One that fails or stops answers a failure to every group waiting;
 * the next group starts a new one, which opens its connection again.
 */
import { Worker } from 'node:worker_threads';

/** One statement of a write, with its values (an array for `?`, an object for named parameters). */
export interface WriteStatement {
	sql: string;
	values: readonly unknown[] | Record<string, unknown>;
	/** Answer the row the statement returns (RETURNING) instead of `{ changes }`. */
	row?: boolean;
	/** Answer every row the statement returns (RETURNING) instead of `{ changes }`. */
	rows?: boolean;
	/** Run only when the statement before it changed a row (or answered one). */
	ifChanged?: boolean;
	/** Run only when the write's first statement changed a row (or answered one). */
	ifFirstChanged?: boolean;
}

/** A failure keeps SQLite's code (SQLITE_FULL, SQLITE_BUSY …): the condition and the HTTP answer read it. */
export type SentError = { message: string; code?: string };
/** A whole group that failed (the lock busy past the wait, a full disk) fails each of its writes. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: SentError };

/** How the thread opens a database's connection: sent with every group, since a new thread has none. */
export interface ConnectionSpec {
	file: string;
	busyTimeoutMs: number;
}

/** After the last connection closed, the thread waits this long for another before it ends. */
const IDLE_END_MS = 1_000;

// Runs in the worker: a connection per database, statements prepared once per text on each.
const COMMIT_IN_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const connections = new Map();
const sent = (error) => ({ message: error.message, code: error.code });
// As sql-adapter.ts changedSomething: rows changed, or a row answered.
const changed = (answer) => (answer === undefined || answer === null ? false : Array.isArray(answer) ? answer.length > 0 : typeof answer.changes === 'number' ? answer.changes > 0 : true);
const attempt = (run) => {
	try {
		return { ok: true, value: run() };
	} catch (error) {
		return { ok: false, error: sent(error) };
	}
};
const connect = ({ file, busyTimeoutMs }) => {
	const database = new Database(file, { timeout: busyTimeoutMs });
	database.pragma('synchronous = FULL');
	const prepared = new Map();
	const statement = (sql) => prepared.get(sql) ?? prepared.set(sql, database.prepare(sql)).get(sql);
	const one = database.transaction((write) => {
		let answer;
		let firstChanged = false;
		for (const [index, step] of write.entries()) {
			if ((step.ifChanged && !changed(answer)) || (step.ifFirstChanged && !firstChanged)) continue;
			answer = step.row ? statement(step.sql).get(step.values) : step.rows ? statement(step.sql).all(step.values) : { changes: statement(step.sql).run(step.values).changes };
			if (index === 0) firstChanged = changed(answer);
		}
		return answer;
	});
	const group = database.transaction((writes) => writes.map((write) => attempt(() => one(write)))).immediate;
	return { database, group, synced: true };
};
parentPort.on('message', ({ id, connection: spec, writes, durable, close }) => {
	if (close) {
		connections.get(id)?.database.close();
		connections.delete(id);
		return parentPort.postMessage({ id, outcomes: [] });
	}
	const opened = connections.has(id) ? { ok: true, value: connections.get(id) } : attempt(() => connect(spec));
	if (!opened.ok) return parentPort.postMessage({ id, outcomes: writes.map(() => opened) });
	const connection = opened.value;
	connections.set(id, connection);
	// A pragma is compiled at every call: set only when a group's durability differs from the last one's.
	if (durable !== connection.synced) connection.database.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
	connection.synced = durable;
	const committed = attempt(() => (writes.length === 0 ? [] : connection.group(writes)));
	parentPort.postMessage({ id, outcomes: committed.ok ? committed.value : writes.map(() => committed) });
});
`;

class CommitThread {
	private worker: Worker | undefined;
	/** The group waiting for its answer, per connection: each connection has at most one under way. */
	private readonly waiting = new Map<number, (outcomes: readonly Outcome[]) => void>();
	/** Connections whose groups this process sent and that have not been closed. */
	private readonly open = new Set<number>();
	private idle: NodeJS.Timeout | undefined;

	/** Commits `writes` as one group on connection `id`; answers one outcome per write. */
	commit(id: number, connection: ConnectionSpec, writes: readonly (readonly WriteStatement[])[], durable: boolean): Promise<readonly Outcome[]> {
		this.open.add(id);
		clearTimeout(this.idle);
		return this.send(id, { id, connection, writes, durable }, writes.length);
	}

	/** Closes connection `id` in the thread (a no-op when it has none); the thread ends once none is left. */
	async close(id: number): Promise<void> {
		if (!this.open.delete(id)) return;
		if (this.worker) await this.send(id, { id, close: true }, 0);
		if (this.open.size === 0 && this.worker) {
			const worker = this.worker;
			this.idle = setTimeout(() => {
				if (this.worker === worker && this.open.size === 0) void this.stop(worker);
			}, IDLE_END_MS);
			this.idle.unref();
		}
	}

	private send(id: number, message: object, expected: number): Promise<readonly Outcome[]> {
		const worker = this.started();
		if (this.waiting.size === 0) worker.ref();
		return new Promise<readonly Outcome[]>((resolve) => {
			// A thread that stopped answers one failure for the whole group.
			this.waiting.set(id, (outcomes) => resolve(outcomes.length === expected ? outcomes : Array.from({ length: expected }, () => outcomes[0]!)));
			worker.postMessage(message);
		});
	}

	private answered(id: number, outcomes: readonly Outcome[]): void {
		const resolve = this.waiting.get(id);
		this.waiting.delete(id);
		if (this.waiting.size === 0) this.worker?.unref();
		resolve?.(outcomes);
	}

	private async stop(worker: Worker): Promise<void> {
		this.worker = undefined;
		await worker.terminate();
	}

	/** The worker, started at the first group and again after one that stopped. */
	private started(): Worker {
		if (this.worker) return this.worker;
		const worker = new Worker(COMMIT_IN_WORKER, { eval: true, workerData: { driver: require.resolve('better-sqlite3') } });
		worker.on('message', ({ id, outcomes }: { id: number; outcomes: Outcome[] }) => this.answered(id, outcomes));
		const stopped = (error: SentError) => {
			if (this.worker !== worker) return;
			this.worker = undefined;
			for (const id of [...this.waiting.keys()]) this.answered(id, [{ ok: false, error }]);
		};
		worker.on('error', (error) => stopped({ message: `the database's commit thread failed: ${error.message}` }));
		worker.on('exit', (code) => stopped({ message: `the database's commit thread stopped with code ${code}` }));
		this.worker = worker;
		return worker;
	}
}

/** This process's commit thread. */
export const commitThread = new CommitThread();
