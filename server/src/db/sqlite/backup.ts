/**
 * A consistent copy of the embedded database while the service runs. `VACUUM INTO` reads inside
 * one read transaction: in WAL mode the service keeps writing meanwhile, and the copy is the
 * database as of one commit (the online backup API instead restarts whenever another process
 * writes, so under a steady load it might never finish). The copy is written aside, checked,
 * synced and only then given its name: a crash or a full disk never leaves half a backup under it.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, createPrivately } from './database';
import { refuseNewerSchema } from './migrate';

interface BackupResult {
	/** The copy's schema version (PRAGMA user_version), the same as the source's. */
	schemaVersion: number;
	bytes: number;
}

/** A refusal caused by what the caller asked for; `field` names the option at fault. */
export class BackupRefused extends Error {
	constructor(
		readonly field: 'to' | 'data-dir',
		message: string,
	) {
		super(message);
		this.name = 'BackupRefused';
	}
}

/** Copies the database at `source` to `target`; an existing `target` is replaced only with `replace`. */
export function backupSqliteDatabase(source: string, target: string, { replace }: { replace: boolean }): BackupResult {
	refuseUnusableTarget(source, target);
	if (!replace && existsSync(target)) throw new BackupRefused('to', `${target} exists; add --force to replace it`);
	const temp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
	try {
		// VACUUM INTO takes an empty file: made first, the copy is never readable by others.
		createPrivately(temp);
		copyInto(source, temp);
		const checked = check(temp);
		syncFile(temp);
		if (replace) renameSync(temp, target);
		else {
			// link() refuses an existing name atomically: a file that appeared meanwhile is kept.
			try {
				linkSync(temp, target);
			} catch (error) {
				if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new BackupRefused('to', `${target} exists; add --force to replace it`);
				throw error;
			}
		}
		syncFile(dirname(target));
		return checked;
	} finally {
		rmSync(temp, { force: true });
	}
}

function refuseUnusableTarget(source: string, target: string): void {
	if (!existsSync(dirname(target))) throw new BackupRefused('to', `the directory ${dirname(target)} does not exist`);
	if (existsSync(target) && statSync(target).isDirectory()) throw new BackupRefused('to', `${target} is a directory; name the file to write`);
	// --force onto the live database (or its WAL) would replace it under the running service.
	const live = [source, `${source}-wal`, `${source}-shm`];
	const sameFile = (a: string, b: string) => resolve(a) === resolve(b) || (existsSync(a) && existsSync(b) && statSync(a).ino === statSync(b).ino && statSync(a).dev === statSync(b).dev);
	if (live.some((file) => sameFile(file, target))) throw new BackupRefused('to', `${target} is the database itself; name another file`);
}

function copyInto(source: string, temp: string): void {
	let database: Database.Database;
	try {
		// Read-only: a backup never migrates, creates or changes the database it copies.
		database = new Database(source, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
	} catch (error) {
		if ((error as { code?: string }).code === 'SQLITE_CANTOPEN') throw new BackupRefused('data-dir', `no database at ${source}`);
		throw error;
	}
	try {
		refuseNewerSchema(database);
		database.prepare('VACUUM INTO ?').run(temp);
	} catch (error) {
		if ((error as { code?: string }).code === 'SQLITE_NOTADB') throw new BackupRefused('data-dir', `${source} is not an SQLite database`);
		throw error;
	} finally {
		database.close();
	}
}

/** The copy must open and pass SQLite's own check before it may be called a backup. */
function check(file: string): BackupResult {
	const copy = new Database(file, { readonly: true, fileMustExist: true });
	try {
		const problems = copy.pragma('integrity_check') as Array<{ integrity_check: string }>;
		if (problems.length !== 1 || problems[0]!.integrity_check !== 'ok') {
			throw new Error(`the copy failed SQLite's integrity check: ${problems.map((row) => row.integrity_check).join('; ')}`);
		}
		const pages = copy.pragma('page_count', { simple: true }) as number;
		const pageSize = copy.pragma('page_size', { simple: true }) as number;
		return { schemaVersion: copy.pragma('user_version', { simple: true }) as number, bytes: pages * pageSize };
	} finally {
		copy.close();
	}
}

/** VACUUM INTO does not sync what it writes; a backup that a power cut can undo is no backup. */
function syncFile(path: string): void {
	const descriptor = openSync(path, 'r');
	try {
		fsyncSync(descriptor);
	} finally {
		closeSync(descriptor);
	}
}
