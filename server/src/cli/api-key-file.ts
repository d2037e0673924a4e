/**
 * The key used when none is configured: created once with 256 random bits, kept in
 * <data-dir>/api-key (readable by the owner only) and reused on every later start.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';

interface StoredApiKey {
	key: string;
	path: string;
	created: boolean;
}

export async function loadOrCreateApiKey(dataDir: string): Promise<StoredApiKey> {
	const path = join(dataDir, 'api-key');
	const existing = await readFile(path, 'utf8').then(
		(text) => text.trim(),
		(error: NodeJS.ErrnoException) => {
			if (error.code === 'ENOENT') return null;
			throw error;
		},
	);
	if (existing) {
		await chmod(path, 0o600).catch(() => undefined);
		return { key: existing, path, created: false };
	}
	const key = `igk_${randomBytes(32).toString('base64url')}`;
	try {
		await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
	} catch (error) {
		// Another process created it first: use theirs, so both agree.
		if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateApiKey(dataDir);
		throw error;
	}
	return { key, path, created: true };
}
