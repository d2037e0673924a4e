/**
 * A clone in a private folder (mode 700, like /root) still gets its PostgreSQL: as root the cluster
 * runs as the user `postgres`, who cannot enter such a folder, so the runner must not start the
 * binaries from inside the clone. The runner is copied into a private folder whose node_modules
 * links to this one; `--preserve-symlinks` keeps every path under the private folder, as in a real
 * clone.
 */
import { chmod, copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startTestPostgres, type TestPostgres } from '../../support/postgres';

const ROOT = join(__dirname, '..', '..', '..', '..');
const SUPPORT = join('test', 'server', 'support');

describe('PostgreSQL for a clone in a private folder', () => {
	let folder: string;
	let cluster: TestPostgres | undefined;

	beforeAll(async () => {
		folder = await mkdtemp(join(tmpdir(), 'imagegen-private-'));
		await chmod(folder, 0o700);
		await mkdir(join(folder, SUPPORT), { recursive: true });
		for (const file of ['postgres-process.mjs', 'postgres-binaries.mjs']) {
			await copyFile(join(ROOT, SUPPORT, file), join(folder, SUPPORT, file));
		}
		await symlink(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
	});

	afterAll(async () => {
		await cluster?.stop();
		await rm(folder, { recursive: true, force: true });
	});

	it('starts and answers a query', async () => {
		cluster = await startTestPostgres({
			runner: join(folder, SUPPORT, 'postgres-process.mjs'),
			nodeOptions: ['--preserve-symlinks', '--preserve-symlinks-main'],
		});
		const client = new Client({ connectionString: await cluster.createDatabase() });
		await client.connect();
		try {
			expect((await client.query<{ answer: number }>('SELECT 6 * 7 AS answer')).rows[0]!.answer).toBe(42);
		} finally {
			await client.end();
		}
	});
});
