/**
 * The keys the CLI uses when none is configured (the API key, the admin key): each created once
 * with 256 random bits, kept in its own file in the data dir (readable by the owner only) and
 * reused on every later start.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Which key: its file in the data dir, and the prefix that tells its secret from the other's. */
interface KeyFile {
	file: string;
	prefix: string;
}

export const API_KEY_FILE: KeyFile = { file: 'api-key', prefix: 'igk_' };
export const ADMIN_KEY_FILE: KeyFile = { file: 'admin-key', prefix: 'igadmin_' };

interface StoredKey {
	key: string;
	path: string;
	created: boolean;
}

/**
 * A file found empty may be one another start has just created and not yet written: it is read
 * again for this long before it counts as holding no key.
 */
const EMPTY_FILE_WAIT_MS = 1_000;
const EMPTY_FILE_STEP_MS = 20;

export async function loadOrCreateKey(dataDir: string, kind: KeyFile): Promise<StoredKey> {
	const path = join(dataDir, kind.file);
	for (let waited = 0; ; waited += EMPTY_FILE_STEP_MS) {
		const existing = await readKey(path);
		if (existing === undefined) {
			const key = `${kind.prefix}${randomBytes(32).toString('base64url')}`;
			if (await createOnce(path, key)) return { key, path, created: true };
			// Another start created it first: use theirs, so both agree.
			continue;
		}
		if (existing !== '') {
			await chmod(path, 0o600).catch(() => undefined);
			return { key: existing, path, created: false };
		}
		if (waited >= EMPTY_FILE_WAIT_MS) {
			throw new Error(`${path} holds no key: write one into it, or delete it and a new one is made`);
		}
		await sleep(EMPTY_FILE_STEP_MS);
	}
}

/** The file's key, trimmed; undefined when there is no file. */
async function readKey(path: string): Promise<string | undefined> {
	try {
		return (await readFile(path, 'utf8')).trim();
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
		throw error;
	}
}

/** Writes the key unless the file exists (`wx`); false when it did. */
async function createOnce(path: string, key: string): Promise<boolean> {
	try {
		await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
		return true;
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
		throw error;
	}
}
