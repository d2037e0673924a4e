/**
 * The files the data dir's engines kept before the SQLite database: JSON sidecars beside the
 * hosted bytes, the idempotency journal and its bodies, the usage ledger and its roll-ups, the
 * managed keys and their charges. No release ever wrote them, so nothing imports them; a start on
 * a data dir that holds them says once that they are no longer read.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Names directly in the data dir (the `.tmp` files are rewrites a crash interrupted). */
const LEGACY_DATA_DIR_FILES = [
	'idempotency.jsonl',
	'idempotency.jsonl.tmp',
	'idempotency',
	'usage.jsonl',
	'usage.jsonl.tmp',
	'usage-totals.jsonl',
	'usage-totals.jsonl.tmp',
	'keys.json',
	'key-charges.jsonl',
];

/** `keys.json` was rewritten through `keys.json.<pid>.<time>.tmp`. */
const LEGACY_KEYS_REWRITE = /^keys\.json\.\d+\.\d+\.tmp$/;

/** Hosted bytes never end in `.json`: such a file beside them is a sidecar of the old metadata. */
const SIDECAR = /\.json$/;

interface LegacyFilesLog {
	info(details: object, message: string): void;
}

/**
 * Logs one line naming the old files found (nothing when there are none); answers their names.
 * `filesDirNames`: what the `files/` directory held, when the caller listed it already (the
 * start-up clean-up does): a directory of one file per hosted file is not read twice.
 */
export async function reportLegacyFiles(dataDir: string, log: LegacyFilesLog, filesDirNames?: readonly string[]): Promise<string[]> {
	const inDataDir = (await listNames(dataDir)).filter((name) => LEGACY_DATA_DIR_FILES.includes(name) || LEGACY_KEYS_REWRITE.test(name));
	const sidecars = (filesDirNames ?? (await listNames(join(dataDir, 'files')))).filter((name) => SIDECAR.test(name));
	const found = [...inDataDir, ...(sidecars.length > 0 ? [`files/*.json (${sidecars.length})`] : [])];
	if (found.length > 0) {
		log.info(
			{ dataDir, files: found },
			'files of an earlier version are no longer read: file metadata, idempotency records, usage and managed keys now live in imagegen.db, which starts empty',
		);
	}
	return found;
}

async function listNames(directory: string): Promise<string[]> {
	try {
		return await readdir(directory);
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
		throw error;
	}
}
