/**
 * A data dir written by the engines before the SQLite database: it starts empty, with one log line
 * naming the old files, which are not read; the old hosted bytes go as leftovers.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type ServiceConfig } from '../../../../server/src/config';
import { openBackends, type Backends } from '../../../../server/src/plugins/backends';
import { reportLegacyFiles } from '../../../../server/src/db/sqlite/legacy-files';

const OLD_ID = 'AAAAAAAAAAAAAAAAAAAAAAAA';

let dataDir: string;
beforeEach(() => (dataDir = mkdtempSync(join(tmpdir(), 'imagegen-legacy-'))));
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function recordingLog() {
	const lines: Array<{ details: object; message: string }> = [];
	return { lines, info: (details: object, message: string) => lines.push({ details, message }), error: () => undefined };
}

/** What the earlier file metadata and idempotency engines left, names as they wrote them. */
function writeOldFilesAndIdempotency(): void {
	mkdirSync(join(dataDir, 'files'));
	mkdirSync(join(dataDir, 'idempotency'));
	const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
	writeFileSync(join(dataDir, 'files', `${OLD_ID}.png`), 'png bytes');
	writeFileSync(join(dataDir, 'files', `${OLD_ID}.json`), JSON.stringify({ id: OLD_ID, name: `${OLD_ID}.png`, size: 9, expiresAt }));
	writeFileSync(join(dataDir, 'idempotency.jsonl'), '{"apiKeyId":"k","key":"x"}\n');
	writeFileSync(join(dataDir, 'idempotency', 'f'.repeat(32)), '{}');
}

/** And what the earlier usage and key engines left. */
function writeOldDataDir(): void {
	writeOldFilesAndIdempotency();
	writeFileSync(join(dataDir, 'usage.jsonl'), '{"t":"2030-01-01T00:00:00.000Z"}\n');
	writeFileSync(join(dataDir, 'usage-totals.jsonl'), '{}\n');
	writeFileSync(join(dataDir, 'keys.json'), '{"version":1,"keys":[]}');
	writeFileSync(join(dataDir, 'keys.json.123.456.tmp'), '{');
	writeFileSync(join(dataDir, 'key-charges.jsonl'), '{}\n');
}

it('names every file the earlier engines wrote, in one line', async () => {
	writeOldDataDir();
	const log = recordingLog();
	const found = await reportLegacyFiles(dataDir, log);
	expect(found.sort()).toEqual(
		['files/*.json (1)', 'idempotency', 'idempotency.jsonl', 'key-charges.jsonl', 'keys.json', 'keys.json.123.456.tmp', 'usage-totals.jsonl', 'usage.jsonl'].sort(),
	);
	expect(log.lines).toHaveLength(1);
	expect(log.lines[0]!.message).toMatch(/no longer read/);
	expect(log.lines[0]!.details).toEqual({ dataDir, files: found });
});

it('says nothing for a new data dir, a missing one, or one of today', async () => {
	const log = recordingLog();
	expect(await reportLegacyFiles(join(dataDir, 'missing'), log)).toEqual([]);
	expect(await reportLegacyFiles(dataDir, log)).toEqual([]);
	mkdirSync(join(dataDir, 'files'));
	writeFileSync(join(dataDir, 'files', `${OLD_ID}.webp`), 'bytes');
	writeFileSync(join(dataDir, 'imagegen.db'), '');
	writeFileSync(join(dataDir, 'usage-pending-0123.jsonl'), '');
	expect(await reportLegacyFiles(dataDir, log)).toEqual([]);
	expect(log.lines).toEqual([]);
});

it('a service started on an old data dir starts empty: the old file is not served, its bytes and sidecar go', async () => {
	writeOldFilesAndIdempotency();
	const log = recordingLog();
	const backends: Backends = await openBackends(parseConfig(['--data-dir', dataDir], {}) as ServiceConfig, log);
	try {
		expect(log.lines.filter((line) => /no longer read/.test(line.message))).toHaveLength(1);
		expect(await backends.fileMetadata.get(OLD_ID)).toBeNull();
		expect(readdirSync(join(dataDir, 'files'))).toEqual([]);
		expect(await backends.idempotencyStore.claim({ apiKeyId: 'k', key: 'x', fingerprint: 'f', expiresAt: new Date(Date.now() + 60_000), leaseUntil: new Date(Date.now() + 60_000) })).toEqual({
			state: 'claimed',
		});
	} finally {
		await backends.usageLedger.close();
		await backends.keyStore.close?.();
		await backends.close?.();
	}
});

it('a start reads the files directory once: the orphan clean-up also finds the old sidecars', async () => {
	writeOldFilesAndIdempotency();
	const filesDir = join(dataDir, 'files');
	const readdir = jest.spyOn(fsPromises, 'readdir');
	const log = recordingLog();
	const backends: Backends = await openBackends(parseConfig(['--data-dir', dataDir], {}) as ServiceConfig, log);
	try {
		expect(readdir.mock.calls.filter(([path]) => path === filesDir)).toHaveLength(1);
		expect(log.lines.filter((line) => /no longer read/.test(line.message)).map((line) => line.details)).toEqual([
			{ dataDir, files: expect.arrayContaining(['files/*.json (1)', 'idempotency.jsonl']) },
		]);
		expect(readdirSync(filesDir)).toEqual([]);
	} finally {
		readdir.mockRestore();
		await backends.usageLedger.close();
		await backends.keyStore.close?.();
		await backends.close?.();
	}
});
