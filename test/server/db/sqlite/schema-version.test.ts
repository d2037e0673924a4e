/**
 * A data dir whose database a newer release has migrated is refused, with the file's schema
 * version and the newest this release knows both named: by the service at start, by `keys` and by
 * `backup`, each with a non-zero exit code, and the file is left as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, startServer } from '../../../helpers/server';
import { openSqliteDatabase } from '../../../../server/src/db/sqlite/database';
import { SQLITE_MIGRATIONS } from '../../../../server/src/db/sqlite/migrations';

const NEWEST = Math.max(...SQLITE_MIGRATIONS.map((step) => step.version));
const FROM_THE_FUTURE = NEWEST + 95;

let dataDir = '';
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-schema-version-'));
	openSqliteDatabase(dataDir).close();
	const database = new Database(join(dataDir, 'imagegen.db'));
	database.pragma(`user_version = ${FROM_THE_FUTURE}`);
	database.close();
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const versionOnFile = () => {
	const database = new Database(join(dataDir, 'imagegen.db'), { readonly: true });
	try {
		return database.pragma('user_version', { simple: true });
	} finally {
		database.close();
	}
};
const namesBoth = new RegExp(`schema version ${FROM_THE_FUTURE}.*newest this release knows is ${NEWEST}`, 's');

it('opening it in process throws, naming both versions', () => {
	expect(() => openSqliteDatabase(dataDir)).toThrow(namesBoth);
	expect(versionOnFile()).toBe(FROM_THE_FUTURE);
});

it('the service does not start: exit code 1, both versions named', async () => {
	const error = await startServer({ dataDir }).then(
		async (server) => {
			await server.stop();
			return new Error('started');
		},
		(caught: Error) => caught,
	);
	expect(error.message).toMatch(/exited with 1 before it was ready/);
	expect(error.message).toMatch(namesBoth);
	expect(versionOnFile()).toBe(FROM_THE_FUTURE);
});

it('keys list and backup refuse it with a non-zero exit code, both versions named', async () => {
	const listed = await runCli(['keys', 'list', '--data-dir', dataDir]);
	expect(listed.code).not.toBe(0);
	expect(listed.stderr).toMatch(namesBoth);

	const copy = join(dataDir, 'copy.db');
	const backedUp = await runCli(['backup', '--data-dir', dataDir, '--to', copy]);
	expect(backedUp.code).not.toBe(0);
	expect(backedUp.stderr).toMatch(namesBoth);
	expect(versionOnFile()).toBe(FROM_THE_FUTURE);
});
