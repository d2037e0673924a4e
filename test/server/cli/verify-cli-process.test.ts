/**
 * `imagegen-server verify FILE` run as the built CLI: the command is dispatched, its exit code is
 * the process's (0 a mark found, 1 none, 2 bad usage), and with --database-url the generation is
 * looked up in PostgreSQL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../../server/src/db/postgres/postgres';
import { SqlProvenanceStore } from '../../../server/src/provenance/sql-provenance-store';
import { runCli } from '../../helpers/server';
import { usePostgresCluster } from '../support/postgres';
import { markedImage, unmarkedImage, writeRecord } from '../provenance/support/marked-images';

const cluster = usePostgresCluster();
let directory: string;
beforeAll(() => {
	directory = mkdtempSync(join(tmpdir(), 'imagegen-verify-process-'));
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function saved(bytes: Buffer, name: string): string {
	const path = join(directory, name);
	writeFileSync(path, bytes);
	return path;
}

test('with --database-url, the generation a mark names is read from PostgreSQL; exit 0', async () => {
	const url = await cluster.createDatabase();
	const database = await openDatabase(url);
	let record: Awaited<ReturnType<typeof writeRecord>>;
	try {
		record = await writeRecord(new SqlProvenanceStore(database, { keepForMs: 86_400_000, includePrompt: false }), 'key_on_postgres');
	} finally {
		await database.close();
	}
	const outcome = await runCli(['verify', saved(await markedImage(record.payload, 'jpeg'), 'marked.jpg'), '--database-url', url, '--data-dir', join(directory, 'data')]);
	expect(outcome.code).toBe(0);
	expect(JSON.parse(outcome.stdout).generation).toEqual({ id: record.generationId, model: 'p-image', created_at: record.createdAt.toISOString() });
});

test('an unmarked image exits 1, a missing file 2', async () => {
	const unmarked = await runCli(['verify', saved(await unmarkedImage('png'), 'plain.png'), '--data-dir', join(directory, 'data')]);
	expect(unmarked.code).toBe(1);
	expect(JSON.parse(unmarked.stdout).watermark.found).toBe(false);
	const missing = await runCli(['verify', join(directory, 'nothing-here.png')]);
	expect(missing.code).toBe(2);
	expect(missing.stderr).toMatch(/^imagegen-server verify: .*nothing-here\.png: no such file/);
});
