/**
 * `imagegen-server verify FILE`, in process: offline on the data dir, it prints the image's C2PA
 * layer, its watermark and the generation the mark names (whichever key made it: the operator
 * asks), exits 0 when a mark was found, 1 when none was, 2 for a command line it cannot run.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runVerifyCommand } from '../../../server/src/cli/verify-cli';
import { databasePath, openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { newProvenancePayload } from '../../../server/src/provenance/provenance-records';
import { SqlProvenanceStore } from '../../../server/src/provenance/sql-provenance-store';
import { TEST_API_KEY } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { download, postJson } from '../support/http';
import { makeMp4 } from '../support/media';
import { markedImage, unmarkedImage, writeRecord } from '../provenance/support/marked-images';

const directories: string[] = [];
const directory = (name: string) => {
	const made = mkdtempSync(join(tmpdir(), `imagegen-verify-${name}-`));
	directories.push(made);
	return made;
};
afterAll(() => {
	for (const made of directories) rmSync(made, { recursive: true, force: true });
});

async function verify(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
	let stdout = '';
	let stderr = '';
	const code = await runVerifyCommand(args, env, { out: (text) => void (stdout += text), err: (text) => void (stderr += text) });
	return { code, stdout, stderr };
}

function saved(bytes: Buffer, name: string): string {
	const path = join(directory('files'), name);
	writeFileSync(path, bytes);
	return path;
}

/** A data dir whose database holds records, as a service left it. */
async function dataDirWithRecords(): Promise<{ dir: string; store: SqlProvenanceStore; close(): Promise<void> }> {
	const dir = directory('data');
	const database = openSqliteDatabase(dir);
	const store = new SqlProvenanceStore(new SqliteAdapter(database), { keepForMs: 86_400_000, includePrompt: false });
	return {
		dir,
		store,
		close: async () => {
			await groupCommitOf(database).close();
			database.close();
		},
	};
}

describe.each(['png', 'jpeg'] as const)('a %s with a watermark', (format) => {
	test('prints the generation it names, whichever key made it, and exits 0', async () => {
		const data = await dataDirWithRecords();
		try {
			const record = await writeRecord(data.store, 'key_someone_else', { model: 'textimage-v2' });
			const file = saved(await markedImage(record.payload, format), `marked.${format}`);
			const { code, stdout, stderr } = await verify([file, '--data-dir', data.dir]);
			expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
			expect(JSON.parse(stdout)).toEqual({
				c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
				watermark: { found: true, algorithm: 'imagegen.dct-spread-spectrum.1', payload: Buffer.from(record.payload).toString('hex') },
				generation: { id: record.generationId, model: 'textimage-v2', created_at: record.createdAt.toISOString() },
			});
		} finally {
			await data.close();
		}
	});
});

test('an image nobody marked: found false, exit 1', async () => {
	const data = await dataDirWithRecords();
	try {
		const { code, stdout } = await verify([saved(await unmarkedImage('jpeg'), 'plain.jpg'), '--data-dir', data.dir]);
		expect(code).toBe(1);
		expect(JSON.parse(stdout)).toMatchObject({ watermark: { found: false, algorithm: null, payload: null }, generation: null });
	} finally {
		await data.close();
	}
});

test('a data dir without a database: the mark is read, no generation named, and no database made', async () => {
	const dir = directory('empty');
	const { code, stdout } = await verify([saved(await markedImage(newProvenancePayload(), 'png'), 'marked.png'), '--data-dir', dir]);
	expect(code).toBe(0);
	expect(JSON.parse(stdout)).toMatchObject({ watermark: { found: true }, generation: null });
	expect(existsSync(databasePath(dir))).toBe(false);
});

test("while a service runs on the data dir: an image it generated shows its manifest, and a record it keeps is named", async () => {
	const server = await startInProcessServer({ args: ['--log-level', 'silent'] });
	try {
		const generated = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a paper boat on a pond' });
		expect(generated.status).toBe(200);
		const { bytes } = await download(generated.body.data[0].url);
		const signed = await verify([saved(bytes, 'generated.png'), '--data-dir', server.dataDir]);
		expect(JSON.parse(signed.stdout).c2pa).toEqual({
			present: true,
			valid: true,
			signer: 'imagegen-server content credentials',
			digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
		});
		const record = await writeRecord(server.app.provenanceRecords, apiKeyIdOf(TEST_API_KEY));
		const marked = await verify([saved(await markedImage(record.payload, 'jpeg'), 'marked.jpg'), '--data-dir', server.dataDir]);
		expect(marked.code).toBe(0);
		expect(JSON.parse(marked.stdout).generation).toMatchObject({ id: record.generationId });
	} finally {
		await server.stop({ removeData: true });
	}
});

describe('a command line it cannot run: exit 2, said on stderr', () => {
	test.each([
		['no file', [], /FILE/],
		['two files', ['a.png', 'b.png'], /one file/],
		['an unknown flag', ['a.png', '--colour'], /--colour/],
		['a bad service option', ['a.png', '--max-image-pixels', 'many'], /--max-image-pixels/],
		['a file that is not there', ['/nonexistent/image.png'], /\/nonexistent\/image\.png/],
	])('%s', async (_case, args, message) => {
		const { code, stdout, stderr } = await verify(args as string[], {});
		expect(code).toBe(2);
		expect(stdout).toBe('');
		expect(stderr).toMatch(/^imagegen-server verify: /);
		expect(stderr).toMatch(message);
	});

	test('a file that is not an image, or a video', async () => {
		for (const bytes of [Buffer.from('plain words, no pixels'), makeMp4()]) {
			const { code, stderr } = await verify([saved(bytes, 'not-an-image.bin'), '--data-dir', directory('unused')]);
			expect(code).toBe(2);
			expect(stderr).toMatch(/not-an-image\.bin/);
		}
	});

	test('--help prints the usage and exits 0', async () => {
		const { code, stdout } = await verify(['--help']);
		expect(code).toBe(0);
		expect(stdout).toMatch(/^Usage: imagegen-server verify <file>/);
	});
});
