/**
 * What `/healthz` says of the embedded database besides "reachable": `full` (a write found no
 * room: every write answers 507 until one succeeds again) or `damaged` (SQLite found a page it
 * cannot read, in a request or in the periodic check).
 *
 * The check is `PRAGMA quick_check` (every b-tree page read and its structure checked; indexes
 * not compared with their tables, which `integrity_check` adds at several times the cost). It reads
 * the whole file, so it runs neither on the event loop nor on every health probe: a worker thread
 * runs it on a read-only connection of its own (WAL lets it read beside the service's writes) every
 * `QUICK_CHECK_INTERVAL_MS`, and health answers with the last result and its time. Damage a request
 * meets first is reported at once.
 */
import { Worker } from 'node:worker_threads';
import type { SqliteDatabase } from './database';
import { onePerConnection } from './per-connection';

type DatabaseState = 'ok' | 'full' | 'damaged';

/** A database of a few GB takes seconds to read through: often enough, and far from always. */
const QUICK_CHECK_INTERVAL_MS = 15 * 60_000;

const DAMAGE_CODES = /^SQLITE_(CORRUPT|NOTADB)/;

/** What `quick_check` found, one problem a line (none when the file is whole). */
export function quickCheckProblems(database: SqliteDatabase): string[] {
	const rows = database.pragma('quick_check(10)') as Array<{ quick_check: string }>;
	return problemLines(rows.map((row) => row.quick_check));
}

/** SQLite may put several problems in one row, under a heading naming the schema. */
function problemLines(rows: readonly string[]): string[] {
	return rows.flatMap((row) => row.split('\n')).filter((line) => line !== 'ok' && !/^\*\*\* in database \w+ \*\*\*$/.test(line));
}

export function isDamage(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	return typeof code === 'string' && DAMAGE_CODES.test(code);
}

// Runs in the worker: its own connection, read-only, closed before it answers.
const CHECK_IN_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let answer;
try {
	const database = new Database(workerData.file, { readonly: true, fileMustExist: true, timeout: 0 });
	try {
		answer = { rows: database.pragma('quick_check(10)').map((row) => row.quick_check) };
	} finally {
		database.close();
	}
} catch (error) {
	answer = { error: { code: error.code, message: error.message } };
}
parentPort.postMessage(answer);
`;

export class SqliteCondition {
	private full = false;
	private damage: string[] = [];
	private checkedAt: Date | undefined;
	private checking: Promise<DatabaseState> | null = null;
	private timer: NodeJS.Timeout | undefined;

	constructor(private readonly database: SqliteDatabase) {}

	current(): { state: DatabaseState; checkedAt?: Date; problems?: string[] } {
		const state: DatabaseState = this.damage.length > 0 ? 'damaged' : this.full ? 'full' : 'ok';
		return { state, ...(this.checkedAt ? { checkedAt: this.checkedAt } : {}), ...(this.damage.length > 0 ? { problems: this.damage } : {}) };
	}

	/**
	 * Told of every failed database call and failed request: a full disk or a damaged page changes
	 * the state. The SQLite error may be the cause of the one a request answered with (a 507).
	 */
	noteFailure(error: unknown, depth = 0): void {
		if (typeof error !== 'object' || error === null || depth > 5) return;
		if ((error as { code?: unknown }).code === 'SQLITE_FULL') this.full = true;
		else if (isDamage(error)) this.damage = [String((error as Error).message)];
		else this.noteFailure((error as { cause?: unknown }).cause, depth + 1);
	}

	/** Told of every committed write: there was room. */
	noteWritten(): void {
		this.full = false;
	}

	/** Runs `quick_check` off the event loop (one at a time); answers the state it leaves. */
	check(): Promise<DatabaseState> {
		this.checking ??= this.runCheck().finally(() => (this.checking = null));
		return this.checking;
	}

	/** Checks every `intervalMs` until `stop()`; the timer never holds the process open. */
	start(intervalMs = QUICK_CHECK_INTERVAL_MS): void {
		this.timer = setInterval(() => void this.check().catch(() => undefined), intervalMs);
		this.timer.unref();
	}

	async stop(): Promise<void> {
		clearInterval(this.timer);
		await this.checking?.catch(() => undefined);
	}

	private async runCheck(): Promise<DatabaseState> {
		const worker = new Worker(CHECK_IN_WORKER, { eval: true, workerData: { file: this.database.name, driver: require.resolve('better-sqlite3') } });
		const answer = await new Promise<{ rows?: string[]; error?: { code?: string; message: string } }>((resolve, reject) => {
			worker.once('message', resolve);
			worker.once('error', reject);
			worker.once('exit', (code) => reject(new Error(`the database check ended with code ${code} before answering`)));
		});
		await worker.terminate();
		this.checkedAt = new Date();
		if (answer.rows) this.damage = problemLines(answer.rows);
		else if (answer.error && isDamage(answer.error)) this.damage = [answer.error.message];
		else if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
		return this.current().state;
	}
}

/** The one condition of a connection, shared by every store that writes through it. */
export const conditionOf = onePerConnection((database) => new SqliteCondition(database));
