/**
 * The service's own version, from its package.json: found by walking up from this file, because
 * the compiled file sits deeper (dist/server/src/) than the source does.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | undefined;

export function serviceVersion(): string {
	cached ??= findVersion(__dirname);
	return cached;
}

function findVersion(start: string): string {
	for (let dir = start; dir !== dirname(dir); dir = dirname(dir)) {
		try {
			const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
			if (manifest.name === 'imagegen-server' && manifest.version) return manifest.version;
		} catch {
			// No package.json at this level: keep walking up.
		}
	}
	return 'unknown';
}
