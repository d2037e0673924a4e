/**
 * The keys the CLI keeps in the data dir when none is configured (the API key, the admin key):
 * made once, readable by the owner only, reused, agreed on by starts that race, and a file that
 * holds no key is a clear error rather than a wait without end.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_KEY_FILE, API_KEY_FILE, loadOrCreateKey } from '../../../server/src/cli/key-files';

let dataDir: string;
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-key-files-'));
});
afterEach(() => {
	rmSync(dataDir, { recursive: true, force: true });
});

test.each([
	['API key', 'api-key', API_KEY_FILE, /^igk_[A-Za-z0-9_-]{43}$/],
	['admin key', 'admin-key', ADMIN_KEY_FILE, /^igadmin_[A-Za-z0-9_-]{43}$/],
] as const)('the %s: 256 random bits, kept in <data-dir>/%s (0600), reused after', async (_name, file, kind, shape) => {
	const made = await loadOrCreateKey(dataDir, kind);
	expect(made).toEqual({ key: expect.stringMatching(shape), path: join(dataDir, file), created: true });
	expect(readFileSync(made.path, 'utf8')).toBe(`${made.key}\n`);
	expect(statSync(made.path).mode & 0o777).toBe(0o600);
	expect(await loadOrCreateKey(dataDir, kind)).toEqual({ ...made, created: false });
});

test('the two keys are different files with different secrets', async () => {
	const api = await loadOrCreateKey(dataDir, API_KEY_FILE);
	const admin = await loadOrCreateKey(dataDir, ADMIN_KEY_FILE);
	expect(admin.path).not.toBe(api.path);
	expect(admin.key.slice('igadmin_'.length)).not.toBe(api.key.slice('igk_'.length));
});

test('starts that race agree on one key, made once', async () => {
	const all = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateKey(dataDir, ADMIN_KEY_FILE)));
	expect(new Set(all.map(({ key }) => key)).size).toBe(1);
	expect(all.filter(({ created }) => created)).toHaveLength(1);
});

test('a key written by the operator is used as it is, and its file is made owner-only', async () => {
	const path = join(dataDir, 'admin-key');
	writeFileSync(path, '  my-own-admin-key-0123456789  \n');
	chmodSync(path, 0o644);
	expect(await loadOrCreateKey(dataDir, ADMIN_KEY_FILE)).toEqual({ key: 'my-own-admin-key-0123456789', path, created: false });
	expect(statSync(path).mode & 0o777).toBe(0o600);
});

test('a file that holds no key is refused, naming the file, instead of waited on for ever', async () => {
	const path = join(dataDir, 'admin-key');
	writeFileSync(path, ' \n', { mode: 0o600 });
	await expect(loadOrCreateKey(dataDir, ADMIN_KEY_FILE)).rejects.toThrow(`${path} holds no key`);
});
