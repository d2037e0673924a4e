/** Work folders a killed process left behind are removed once older than any job; younger ones stay. */
import { mkdirSync, mkdtempSync, existsSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeLeftWorkFolders } from '../../../server/src/video/work-folders';

test('removes only the video work folders older than the bound', async () => {
	const root = mkdtempSync(join(tmpdir(), 'imagegen-work-'));
	const now = Date.now();
	const folder = (name: string, ageMs: number) => {
		const path = join(root, name);
		mkdirSync(path);
		writeFileSync(join(path, 'host.mp4'), 'partial');
		utimesSync(path, (now - ageMs) / 1000, (now - ageMs) / 1000);
		return path;
	};
	const old = folder('video-old', 3 * 3_600_000);
	const young = folder('video-young', 60_000);
	const other = folder('not-a-video', 3 * 3_600_000);
	expect(await removeLeftWorkFolders(root, 2 * 3_600_000, now)).toBe(1);
	expect([existsSync(old), existsSync(young), existsSync(other)]).toEqual([false, true, true]);
	expect(await removeLeftWorkFolders(join(root, 'missing'), 0, now)).toBe(0);
});
