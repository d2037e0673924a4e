/** The embedded key store (the data dir): the contract, plus what only a file-backed store must do. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHARGES_FILE, EmbeddedKeyStore, KEYS_FILE } from '../../../server/src/keys/embedded-key-store';
import { periodStart } from '../../../server/src/keys/managed-key';
import { describeKeyStoreContract, managedKey, withoutSecret } from '../support/key-store-contract';

describeKeyStoreContract('EmbeddedKeyStore', async () => {
	const dataDir = await mkdtemp(join(tmpdir(), 'key-store-contract-'));
	return { open: () => EmbeddedKeyStore.open(dataDir), shared: false, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
});

describe('EmbeddedKeyStore files', () => {
	let dataDir: string;
	beforeEach(async () => {
		dataDir = await mkdtemp(join(tmpdir(), 'key-store-'));
	});
	afterEach(() => rm(dataDir, { recursive: true, force: true }));

	it('stores only the hash of a secret, readable by the owner only', async () => {
		const store = await EmbeddedKeyStore.open(dataDir);
		const { secret, ...key } = managedKey();
		await store.create(key);
		const text = await readFile(join(dataDir, KEYS_FILE), 'utf8');
		expect(text).toContain(key.secretHash);
		expect(text).not.toContain(secret);
		const { mode } = await import('node:fs/promises').then((fs) => fs.stat(join(dataDir, KEYS_FILE)));
		expect(mode & 0o077).toBe(0);
	});

	it('sees keys written by another process (the keys CLI) while it runs', async () => {
		const service = await EmbeddedKeyStore.open(dataDir);
		const cli = await EmbeddedKeyStore.open(dataDir);
		const key = withoutSecret(managedKey());
		expect(await service.findBySecretHash(key.secretHash)).toBeNull();
		await cli.create(key);
		expect((await service.findBySecretHash(key.secretHash))?.id).toBe(key.id);
		await cli.revoke(key.id, new Date());
		expect(await service.get(key.id)).toBeNull();
	});

	it('skips a torn last charge line and counts a repeated one once', async () => {
		const store = await EmbeddedKeyStore.open(dataDir);
		const key = withoutSecret(managedKey());
		await store.create(key);
		const at = new Date().toISOString();
		await writeFile(
			join(dataDir, CHARGES_FILE),
			`${JSON.stringify({ id: 'a', key: key.id, usd: 0.5, at })}\n${JSON.stringify({ id: 'a', key: key.id, usd: 0.5, at })}\n{"id":"b","key":"${key.id}","us`,
		);
		const reopened = await EmbeddedKeyStore.open(dataDir);
		expect(await reopened.spent(key.id, periodStart('day', new Date()))).toBe(0.5);
	});

	it('refuses to start on a keys file that is not JSON rather than forget every key', async () => {
		await writeFile(join(dataDir, KEYS_FILE), '{"keys": [');
		await expect(EmbeddedKeyStore.open(dataDir)).rejects.toThrow(/keys\.json is not valid JSON/);
	});
});
