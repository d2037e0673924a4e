/**
 * Deleting a file forgets the idempotent answers that point at it, on the embedded and the
 * PostgreSQL configuration: a repeat of the upload (or generation) then runs again and answers a
 * live URL instead of replaying one that is 404. The same when the file expired first (an upload's
 * `expires_in` is shorter than the retention the answer is kept for).
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { startServer, type RunningServer } from '../../helpers/server';
import { call, download, postJson } from '../support/http';
import { makeImage } from '../support/media';
import { metadataEngines, usePostgresCluster } from '../support/postgres';

const OWNER = 'owner-key-0123456789';
const OTHER = 'other-key-0123456789';

const postgres = usePostgresCluster();

const configurations = metadataEngines(postgres);

/** Restarts the server on its data dir (and database); `env` e.g. puts its clock ahead. */
async function restarted(server: RunningServer, env: Record<string, string> = {}): Promise<RunningServer> {
	const args = server.process.spawnargs.slice(2);
	await server.stop();
	const dataDir = args[args.indexOf('--data-dir') + 1]!;
	const database = args.includes('--database-url') ? ['--database-url', args[args.indexOf('--database-url') + 1]!] : [];
	return startServer({ apiKey: `${OWNER},${OTHER}`, dataDir, args: database, env });
}

/**
 * Lets a file's expiry pass without waiting a minute: on PostgreSQL the database's clock decides,
 * so its row is moved into the past; the embedded service judges by its own clock, so it restarts
 * two minutes ahead.
 */
async function expire(server: RunningServer, fileId: string): Promise<RunningServer> {
	const args = server.process.spawnargs;
	if (args.includes('--database-url')) {
		const client = new Client({ connectionString: args[args.indexOf('--database-url') + 1] });
		await client.connect();
		try {
			const { rowCount } = await client.query("UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1", [fileId]);
			expect(rowCount).toBe(1);
		} finally {
			await client.end();
		}
		return server;
	}
	return restarted(server, {
		NODE_OPTIONS: `--require ${join(__dirname, '..', 'support', 'skewed-clock.cjs')}`,
		IMAGEGEN_TEST_CLOCK_SKEW_MS: String(120_000),
	});
}

/**
 * Moves a file's expiry into the past in its metadata, whichever engine holds it (a generated
 * image lives as long as the retention, which is also how long its answer is kept).
 */
async function expireNow(server: RunningServer, fileId: string): Promise<void> {
	const args = server.process.spawnargs;
	if (args.includes('--database-url')) {
		await expire(server, fileId);
		return;
	}
	const database = new Database(join(server.dataDir, 'imagegen.db'));
	try {
		expect(database.prepare('UPDATE files SET expires_at = ? WHERE id = ?').run(Date.now() - 1000, fileId).changes).toBe(1);
	} finally {
		database.close();
	}
}

describe.each(configurations)('%s', (_name, argsOf) => {
	let server: RunningServer;
	beforeAll(async () => {
		server = await startServer({ apiKey: `${OWNER},${OTHER}`, args: await argsOf() });
	}, 60_000);
	afterAll(() => server?.stop({ removeData: true }));

	const as = (apiKey: string) => ({ ...server, apiKey });
	let counter = 0;
	const newKey = () => `forget-${Date.now()}-${++counter}`;
	const idOf = (url: string) => url.split('/').pop()!.replace(/\.\w+$/, '');

	/** A repeat of `body` under `key` runs again (a new, live file), and from then on replays that new answer. */
	async function expectUploadRunsAgain(key: string, body: object, goneFileId: string): Promise<void> {
		const repeat = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(repeat.status).toBe(200);
		expect(repeat.headers.get('idempotent-replayed')).toBeNull();
		expect(repeat.body.id).not.toBe(goneFileId);
		expect((await download(repeat.body.imageUrl)).status).toBe(200);
		const again = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.body).toEqual(repeat.body);
	}

	test('upload with a key, DELETE the file, repeat with the key: the upload runs again and its URL works', async () => {
		const key = newKey();
		const body = { file: (await makeImage('png', 20, 12)).toString('base64') };
		const first = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(first.status).toBe(200);
		expect((await call(as(OWNER), `/v1/files/${first.body.id}`, { method: 'DELETE' })).status).toBe(204);

		await expectUploadRunsAgain(key, body, first.body.id);
	});

	test('a generation whose image was deleted runs again on a repeat', async () => {
		const key = newKey();
		const body = { model: 'p-image', prompt: 'a lighthouse', response_format: 'url', seed: 7 };
		const first = await postJson(as(OWNER), '/v1/images/generations', body, { headers: { 'idempotency-key': key } });
		expect(first.status).toBe(200);
		const url: string = first.body.data[0].url;
		expect((await call(as(OWNER), `/v1/files/${idOf(url)}`, { method: 'DELETE' })).status).toBe(204);

		const repeat = await postJson(as(OWNER), '/v1/images/generations', body, { headers: { 'idempotency-key': key } });
		expect(repeat.status).toBe(200);
		expect(repeat.headers.get('idempotent-replayed')).toBeNull();
		expect((await download(repeat.body.data[0].url)).status).toBe(200);
	});

	describe('an inline (b64_json) generation, whose answer is replayed from its stored image', () => {
		const inlineBody = (seed: number) => ({ model: 'p-image', prompt: 'a lighthouse, inline', response_format: 'b64_json', seed });
		const stored = () => new Set(readdirSync(join(server.dataDir, 'files')).filter((name) => name.endsWith('.png')));
		/** Generates with `key`; answers the first answer and the id of the image stored for it. */
		async function generatedInline(key: string, seed: number): Promise<{ body: any; fileId: string }> {
			const before = stored();
			const first = await postJson(as(OWNER), '/v1/images/generations', inlineBody(seed), { headers: { 'idempotency-key': key } });
			expect(first.status).toBe(200);
			const added = [...stored()].filter((name) => !before.has(name));
			expect(added).toHaveLength(1);
			return { body: first.body, fileId: idOf(added[0]!) };
		}
		async function expectRunsAgain(key: string, seed: number, first: any): Promise<void> {
			const repeat = await postJson(as(OWNER), '/v1/images/generations', inlineBody(seed), { headers: { 'idempotency-key': key } });
			expect(repeat.status).toBe(200);
			expect(repeat.headers.get('idempotent-replayed')).toBeNull();
			expect(repeat.body.created).toBeGreaterThanOrEqual(first.created);
			expect(repeat.body.data[0].b64_json.length).toBeGreaterThan(100);
			const again = await postJson(as(OWNER), '/v1/images/generations', inlineBody(seed), { headers: { 'idempotency-key': key } });
			expect(again.headers.get('idempotent-replayed')).toBe('true');
			expect(again.body).toEqual(repeat.body);
		}

		test('its image deleted: a repeat runs again', async () => {
			const key = newKey();
			const { body, fileId } = await generatedInline(key, 11);
			expect((await call(as(OWNER), `/v1/files/${fileId}`, { method: 'DELETE' })).status).toBe(204);
			await expectRunsAgain(key, 11, body);
		});

		test('its image’s bytes gone from storage without the service hearing of it: a repeat runs again', async () => {
			const key = newKey();
			const { body, fileId } = await generatedInline(key, 12);
			const name = [...stored()].find((entry) => entry.startsWith(`${fileId}.`))!;
			rmSync(join(server.dataDir, 'files', name));
			await expectRunsAgain(key, 12, body);
		});

		test('its image expired before the answer did: a repeat runs again', async () => {
			const key = newKey();
			const { body, fileId } = await generatedInline(key, 13);
			await expireNow(server, fileId);
			await expectRunsAgain(key, 13, body);
		});
	});

	test('answers that point at other files, and other keys’ answers, are kept', async () => {
		const key = newKey();
		const body = { file: (await makeImage('png', 18, 10)).toString('base64') };
		const kept = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		const theirs = await postJson(as(OTHER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		const deleted = await postJson(as(OWNER), '/v1/uploads', { file: body.file }, { headers: { 'idempotency-key': newKey() } });
		expect((await call(as(OWNER), `/v1/files/${deleted.body.id}`, { method: 'DELETE' })).status).toBe(204);
		// Another key cannot make the owner's answers be forgotten by naming the owner's file.
		expect((await call(as(OTHER), `/v1/files/${kept.body.id}`, { method: 'DELETE' })).status).toBe(404);

		const keptAgain = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(keptAgain.headers.get('idempotent-replayed')).toBe('true');
		expect(keptAgain.body).toEqual(kept.body);
		const theirsAgain = await postJson(as(OTHER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(theirsAgain.headers.get('idempotent-replayed')).toBe('true');
		expect(theirsAgain.body).toEqual(theirs.body);
	});

	test('forgotten across a restart (the embedded journal remembers the delete)', async () => {
		const key = newKey();
		const body = { file: (await makeImage('png', 22, 14)).toString('base64') };
		const first = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect((await call(as(OWNER), `/v1/files/${first.body.id}`, { method: 'DELETE' })).status).toBe(204);
		server = await restarted(server);
		const repeat = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(repeat.status).toBe(200);
		expect(repeat.headers.get('idempotent-replayed')).toBeNull();
		expect((await download(repeat.body.imageUrl)).status).toBe(200);
	}, 60_000);

	test('an upload whose file expired before its answer did runs again on a repeat', async () => {
		const key = newKey();
		const body = { file: (await makeImage('png', 24, 16)).toString('base64'), expires_in: 60 };
		const first = await postJson(as(OWNER), '/v1/uploads', body, { headers: { 'idempotency-key': key } });
		expect(first.status).toBe(200);
		// Another answer of the same key, whose file is still alive, keeps replaying.
		const otherKey = newKey();
		const lasting = await postJson(as(OWNER), '/v1/uploads', { file: body.file }, { headers: { 'idempotency-key': otherKey } });
		server = await expire(server, first.body.id);
		expect((await download(first.body.imageUrl.replace(/^http:\/\/[^/]+/, server.origin))).status).toBe(404);

		await expectUploadRunsAgain(key, body, first.body.id);

		const lastingAgain = await postJson(as(OWNER), '/v1/uploads', { file: body.file }, { headers: { 'idempotency-key': otherKey } });
		expect(lastingAgain.headers.get('idempotent-replayed')).toBe('true');
		expect(lastingAgain.body).toEqual(lasting.body);
	}, 60_000);
});
