/**
 * `imagegen-server backup --data-dir D --to FILE [--force]`: a consistent copy of the data dir's
 * database, taken while the service runs or not. Restoring is: stop the service, put the copy in
 * place as <data-dir>/imagegen.db, start it. PostgreSQL deployments use pg_dump instead.
 * Exit codes: 0 done, 1 failed (no database, disk error), 2 bad usage.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { parseConfig } from '../config';
import { BackupRefused, backupSqliteDatabase } from '../db/sqlite/backup';
import { databasePath } from '../db/sqlite/database';
import { reportUsageError, UsageError, USAGE_EXIT_CODE, type CommandOutput } from './usage-error';

const BACKUP_HELP = `Usage: imagegen-server backup --to <file> [--data-dir <dir>] [--force]

Copies the data dir's database (<data-dir>/imagegen.db) to <file>: a consistent copy, also while
the service runs. The copy is written aside and checked before it gets its name.
Restore: stop the service, put the copy in place as <data-dir>/imagegen.db, start it.
Hosted bytes (<data-dir>/files) and the api-key file are plain files: copy them as they are.

Options:
  --to <file>             Where the copy goes (required)
  --data-dir <dir>        The service's data dir; env IMAGEGEN_DATA_DIR; default ./data
  --force                 Replace <file> if it exists
`;

interface BackupRequest {
	dataDir: string;
	to: string;
	force: boolean;
}

export function runBackupCommand(argv: readonly string[], env: NodeJS.ProcessEnv, output: CommandOutput): number {
	let request: BackupRequest | 'help';
	try {
		request = parseRequest(argv, env);
	} catch (error) {
		return reportUsageError('backup', error, output);
	}
	if (request === 'help') {
		output.out(BACKUP_HELP);
		return 0;
	}
	const source = databasePath(request.dataDir);
	try {
		const copied = backupSqliteDatabase(source, request.to, { replace: request.force });
		output.out(`Backed up ${source} to ${request.to} (${copied.bytes} bytes, schema version ${copied.schemaVersion}, integrity ok).\n`);
		return 0;
	} catch (error) {
		if (error instanceof BackupRefused) {
			output.err(`imagegen-server backup: --${error.field}: ${error.message}${hintFor(error, env)}\n`);
			return error.field === 'to' ? USAGE_EXIT_CODE : 1;
		}
		output.err(`imagegen-server backup: ${(error as Error).message}\n`);
		return 1;
	}
}

function parseRequest(argv: readonly string[], env: NodeJS.ProcessEnv): BackupRequest | 'help' {
	let values: { to?: string; 'data-dir'?: string; force?: boolean; help?: boolean };
	try {
		({ values } = parseArgs({
			args: [...argv],
			options: { to: { type: 'string' }, 'data-dir': { type: 'string' }, force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
			strict: true,
			allowPositionals: false,
		}));
	} catch (error) {
		throw new UsageError(`${(error as Error).message} (see --help)`);
	}
	if (values.help) return 'help';
	if (values.to === undefined || values.to.trim() === '') throw new UsageError('--to is required: the file to write the copy to');
	// The data dir is found exactly as the service finds it (flag, then IMAGEGEN_DATA_DIR, then its default).
	const config = parseConfig(values['data-dir'] === undefined ? [] : ['--data-dir', values['data-dir']], { IMAGEGEN_DATA_DIR: env.IMAGEGEN_DATA_DIR });
	if (typeof config === 'string') return 'help';
	return { dataDir: config.dataDir, to: resolve(values.to), force: values.force === true };
}

/** A deployment on PostgreSQL has no database in its data dir: say where its data is. */
function hintFor(error: BackupRefused, env: NodeJS.ProcessEnv): string {
	if (error.field !== 'data-dir' || !env.IMAGEGEN_DATABASE_URL) return '';
	return ' (IMAGEGEN_DATABASE_URL is set: that service keeps its data in PostgreSQL; back it up with pg_dump)';
}
