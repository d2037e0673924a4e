import { open, rename } from 'node:fs/promises';

/** Lines are written out once this much text is gathered: big files never become one string. */
const BATCH_CHARS = 64 * 1024;

/** Where a replacement is written before the rename; left behind only by a crash, and then stale. */
export const temporaryFileOf = (file: string): string => `${file}.tmp`;

/**
 * Replaces `file` with `lines` (each without its newline): written aside, synced and renamed, so a
 * crash leaves one whole file, the old or the new. Answers how many lines were written. `temp` is
 * where it is written first; writers in several processes each need their own.
 */
export async function replaceWithLines(file: string, lines: Iterable<string> | AsyncIterable<string>, temp = temporaryFileOf(file)): Promise<number> {
	const handle = await open(temp, 'w', 0o600);
	let count = 0;
	try {
		let batch = '';
		for await (const line of lines) {
			batch += `${line}\n`;
			count++;
			if (batch.length >= BATCH_CHARS) {
				await handle.write(batch);
				batch = '';
			}
		}
		await handle.write(batch);
		await handle.sync();
	} finally {
		await handle.close();
	}
	await rename(temp, file);
	return count;
}
