/**
 * POST /v1/provenance/verify on the built service, where the watermark is read in its worker
 * thread (provenance/watermark-reader.ts; the in-process suites read it on the event loop, having
 * no compiled worker): a mark found and its generation named, an unmarked image found to carry
 * nothing, a damaged one refused naming its field.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { SqlProvenanceStore } from '../../../server/src/provenance/sql-provenance-store';
import { SERVER_CLI, startServer, TEST_API_KEY, type RunningServer } from '../../helpers/server';
import { call, expectApiError } from '../support/http';
import { markedImage, unmarkedImage, writeRecord } from './support/marked-images';

let server: RunningServer;
beforeAll(async () => {
	server = await startServer();
});
afterAll(() => server.stop({ removeData: true }));

function verifyFile(bytes: Buffer) {
	const form = new FormData();
	form.append('file', new Blob([bytes]), 'image.bin');
	return call(server, '/v1/provenance/verify', { method: 'POST', body: form });
}

test('the built service has the compiled worker the watermark is read in', () => {
	expect(existsSync(join(dirname(SERVER_CLI), 'provenance', 'watermark-detect-worker.js'))).toBe(true);
});

test('a mark is found in the worker and its generation named; an unmarked image carries nothing; a damaged one is refused', async () => {
	// Another process on the data dir, as the generation pipeline's record would be written.
	const database = openSqliteDatabase(server.dataDir);
	let record: Awaited<ReturnType<typeof writeRecord>>;
	try {
		record = await writeRecord(new SqlProvenanceStore(new SqliteAdapter(database), { keepForMs: 86_400_000, includePrompt: false }), apiKeyIdOf(TEST_API_KEY));
	} finally {
		await groupCommitOf(database).close();
		database.close();
	}
	const marked = await verifyFile(await markedImage(record.payload, 'jpeg'));
	expect(marked.status).toBe(200);
	expect(marked.body).toMatchObject({ watermark: { found: true, payload: Buffer.from(record.payload).toString('hex') }, generation: { id: record.generationId } });
	const plain = await verifyFile(await unmarkedImage('png'));
	expect(plain.body).toMatchObject({ watermark: { found: false }, generation: null });
	const png = await unmarkedImage('png');
	expectApiError(await verifyFile(png.subarray(0, Math.floor(png.length / 2))), 400, 'file', /could not be decoded/);
});
