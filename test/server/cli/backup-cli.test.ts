/**
 * `imagegen-server backup`, run as the built CLI: taken while a service on the same data dir takes
 * uploads and generations, the copy is a whole SQLite database of the same schema version, and a
 * service started on a data dir restored from it serves the files and counts the usage recorded
 * before the backup. Bad requests name their flag and leave nothing behind.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, startServer, type RunningServer } from '../../helpers/server';
import { call, download, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';

const backup = (args: string[], env: Record<string, string> = {}) => runCli(['backup', ...args], env);

const directories: string[] = [];
const servers: RunningServer[] = [];
const directory = (name: string) => {
	const made = mkdtempSync(join(tmpdir(), `imagegen-backup-${name}-`));
	directories.push(made);
	return made;
};

afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
});
afterAll(() => {
	for (const made of directories) rmSync(made, { recursive: true, force: true });
});

interface Hosted {
	id: string;
	url: string;
	bytes: Buffer;
}

async function uploadOne(server: RunningServer, image: Buffer): Promise<Hosted> {
	const answer = await uploadFile<{ id: string; imageUrl: string }>(server, image, {}, { mimeType: 'image/png' });
	expect(answer.status).toBe(200);
	return { id: answer.body.id, url: answer.body.imageUrl, bytes: image };
}

async function generateOne(server: RunningServer, prompt: string): Promise<Hosted> {
	const answer = await postJson<{ data: Array<{ url: string }> }>(server, '/v1/images/generations', { model: 'p-image', prompt });
	expect(answer.status).toBe(200);
	const { url } = answer.body.data[0]!;
	const hosted = await download(url);
	expect(hosted.status).toBe(200);
	return { id: /\/files\/([^./]+)\./.exec(url)![1]!, url, bytes: hosted.bytes };
}

const usageOf = async (server: RunningServer) => (await call<{ total: { images: number } }>(server, '/v1/usage')).body.total.images;

const schemaVersionOf = (file: string) => {
	const database = new Database(file, { readonly: true, fileMustExist: true });
	try {
		return { version: database.pragma('user_version', { simple: true }) as number, integrity: database.pragma('integrity_check', { simple: true }) as string };
	} finally {
		database.close();
	}
};

it('copies the database while the service takes uploads and generations; a service restored from the copy has what came before', async () => {
	const live = directory('live');
	const server = await startServer({ dataDir: live });
	servers.push(server);
	const image = await makeImage('png', 96, 64);
	const before: Hosted[] = [];
	for (let round = 0; round < 3; round++) before.push(await uploadOne(server, image), await generateOne(server, `before the backup ${round}`));
	const imagesBefore = await usageOf(server);
	expect(imagesBefore).toBe(3);

	// Requests keep arriving for as long as the backup runs; none of them may fail because of it.
	let loading = true;
	const failures: number[] = [];
	const load = (async () => {
		for (let round = 0; loading; round++) {
			const answers = await Promise.all([uploadFile(server, image, {}, { mimeType: 'image/png' }), postJson(server, '/v1/images/generations', { model: 'p-image', prompt: `during ${round}` })]);
			failures.push(...answers.map((answer) => answer.status).filter((status) => status !== 200));
		}
	})();
	const copy = join(directory('copy'), 'imagegen-backup.db');
	const copied = await backup(['--data-dir', live, '--to', copy]);
	loading = false;
	await load;
	expect(copied).toMatchObject({ code: 0, stderr: '' });
	expect(copied.stdout).toContain(copy);
	expect(failures).toEqual([]);
	await server.stop();

	// Checked directly: a whole database, at the schema version of the one it was taken from.
	const source = schemaVersionOf(join(live, 'imagegen.db'));
	expect(source.version).toBeGreaterThan(0);
	expect(schemaVersionOf(copy)).toEqual({ version: source.version, integrity: 'ok' });
	expect(readdirSync(join(copy, '..'))).toEqual(['imagegen-backup.db']);

	// Restored the documented way: the data dir's plain files, and the copy in place of the database.
	const restored = directory('restored');
	cpSync(live, restored, { recursive: true, filter: (path) => !/imagegen\.db(-wal|-shm)?$/.test(path) });
	cpSync(copy, join(restored, 'imagegen.db'));
	const again = await startServer({ dataDir: restored });
	servers.push(again);
	for (const file of before) {
		const info = await call<{ id: string }>(again, `/v1/files/${file.id}`);
		expect([file.id, info.status]).toEqual([file.id, 200]);
		const hosted = await download(`${again.origin}/files/${file.url.split('/files/')[1]}`);
		expect(hosted.status).toBe(200);
		expect(hosted.bytes.equals(file.bytes)).toBe(true);
	}
	expect(await usageOf(again)).toBeGreaterThanOrEqual(imagesBefore);
}, 120_000);

it('takes every committed row of a writer killed with SIGKILL, those still only in its write-ahead log too', async () => {
	const dataDir = directory('killed');
	// A writer that commits rows one by one and never checkpoints: they live only in imagegen.db-wal.
	const writer = spawn(process.execPath, ['-e', `
		const Database = require('better-sqlite3');
		const database = new Database(${JSON.stringify(join(dataDir, 'imagegen.db'))});
		database.pragma('journal_mode = WAL');
		database.pragma('wal_autocheckpoint = 0');
		database.exec('CREATE TABLE rows (n INTEGER)');
		const insert = database.prepare('INSERT INTO rows VALUES (?)');
		for (let n = 1; n <= 500; n++) insert.run(n);
		process.stdout.write('committed\\n');
		setInterval(() => undefined, 1000);
	`], { cwd: join(__dirname, '..', '..', '..', 'server'), stdio: ['ignore', 'pipe', 'inherit'] });
	await new Promise((resolve) => writer.stdout!.once('data', resolve));
	const exited = new Promise((resolve) => writer.once('exit', resolve));
	writer.kill('SIGKILL');
	await exited;
	expect(statSync(join(dataDir, 'imagegen.db-wal')).size).toBeGreaterThan(statSync(join(dataDir, 'imagegen.db')).size);

	const copy = join(directory('killed-copy'), 'copy.db');
	expect((await backup(['--data-dir', dataDir, '--to', copy])).code).toBe(0);
	const database = new Database(copy, { readonly: true, fileMustExist: true });
	try {
		expect(database.prepare('SELECT count(*) AS rows, sum(n) AS total FROM rows').get()).toEqual({ rows: 500, total: (500 * 501) / 2 });
	} finally {
		database.close();
	}
});

describe('refusals name their flag and leave nothing behind', () => {
	let dataDir: string;
	let target: string;

	beforeAll(async () => {
		dataDir = directory('refusals');
		// A service started once leaves its database behind.
		const server = await startServer({ dataDir });
		await server.stop();
		target = join(directory('target'), 'copy.db');
	});

	it('--to is required', async () => {
		const outcome = await backup(['--data-dir', dataDir]);
		expect(outcome.code).toBe(2);
		expect(outcome.stderr).toMatch(/--to is required/);
	});

	it('an existing --to is kept unless --force is given; with it, it is replaced', async () => {
		writeFileSync(target, 'an older backup');
		const refused = await backup(['--data-dir', dataDir, '--to', target]);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toMatch(/--to: .*exists; add --force/);
		expect(readFileSync(target, 'utf8')).toBe('an older backup');

		const forced = await backup(['--data-dir', dataDir, '--to', target, '--force']);
		expect(forced.code).toBe(0);
		expect(schemaVersionOf(target).integrity).toBe('ok');
		expect(readdirSync(join(target, '..'))).toEqual(['copy.db']);
	});

	it('--to the database itself is refused, even with --force', async () => {
		const database = join(dataDir, 'imagegen.db');
		const before = readFileSync(database);
		const outcome = await backup(['--data-dir', dataDir, '--to', database, '--force']);
		expect(outcome.code).toBe(2);
		expect(outcome.stderr).toMatch(/--to: .*is the database itself/);
		expect(readFileSync(database).equals(before)).toBe(true);
	});

	it('--to in a directory that does not exist', async () => {
		const outcome = await backup(['--data-dir', dataDir, '--to', join(dataDir, 'no-such-dir', 'copy.db')]);
		expect(outcome.code).toBe(2);
		expect(outcome.stderr).toMatch(/--to: the directory .*no-such-dir does not exist/);
	});

	it('a data dir without a database (from --data-dir or IMAGEGEN_DATA_DIR) is named, and nothing is created in it', async () => {
		const empty = directory('empty');
		const outcome = await backup(['--to', join(empty, 'copy.db')], { IMAGEGEN_DATA_DIR: empty });
		expect(outcome.code).toBe(1);
		expect(outcome.stderr).toContain(`--data-dir: no database at ${join(empty, 'imagegen.db')}`);
		expect(readdirSync(empty)).toEqual([]);
	});

	it('IMAGEGEN_DATA_DIR is read; an unknown flag is refused', async () => {
		const fromEnvironment = join(directory('env-target'), 'copy.db');
		expect((await backup(['--to', fromEnvironment], { IMAGEGEN_DATA_DIR: dataDir })).code).toBe(0);
		expect(existsSync(fromEnvironment)).toBe(true);
		const unknown = await backup(['--data-dir', dataDir, '--to', join(dataDir, 'x.db'), '--port', '1']);
		expect(unknown.code).toBe(2);
		expect(unknown.stderr).toMatch(/--port/);
	});
});
