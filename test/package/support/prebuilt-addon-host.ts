/**
 * better-sqlite3's release host, on loopback. A user's `npm install` runs its install script,
 * which downloads the prebuilt addon for the user's Node and platform (prebuild-install) and only
 * compiles when none can be fetched. No test may reach the real host, so this one serves the addon
 * this checkout built, under the name and path prebuild-install asks for; npm is pointed at it with
 * `npm_config_better_sqlite3_binary_host`, prebuild-install's documented mirror setting.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PrebuiltAddonHost {
	/** The environment that points prebuild-install here. */
	env: Record<string, string>;
	/** Paths asked for, in order. */
	requests: string[];
	/** The one path that serves the addon. */
	addonPath: string;
	close(): Promise<void>;
}

export async function servePrebuiltSqliteAddon(root: string): Promise<PrebuiltAddonHost> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { ensureSqliteAddon } = require(join(root, 'scripts', 'sqlite-addon.cjs')) as { ensureSqliteAddon(options?: { log?: (line: string) => void }): string };
	const addon = ensureSqliteAddon({ log: () => undefined });
	const { version } = JSON.parse(readFileSync(require.resolve('better-sqlite3/package.json', { paths: [join(root, 'server')] }), 'utf8')) as { version: string };

	// A prebuild is a gzipped tar holding build/Release/<addon>.
	const staging = mkdtempSync(join(tmpdir(), 'imagegen-prebuild-'));
	mkdirSync(join(staging, 'build', 'Release'), { recursive: true });
	copyFileSync(addon, join(staging, 'build', 'Release', 'better_sqlite3.node'));
	execFileSync('tar', ['-czf', join(staging, 'prebuild.tar.gz'), '-C', staging, 'build']);
	const archive = readFileSync(join(staging, 'prebuild.tar.gz'));
	rmSync(staging, { recursive: true, force: true });

	const addonPath = `/v${version}/better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
	const requests: string[] = [];
	const server = createServer((request, response) => {
		requests.push(request.url ?? '');
		if (request.url !== addonPath) {
			response.writeHead(404).end();
			return;
		}
		response.writeHead(200, { 'content-type': 'application/gzip', 'content-length': archive.length }).end(archive);
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return {
		env: { npm_config_better_sqlite3_binary_host: `http://127.0.0.1:${port}` },
		requests,
		addonPath,
		close: () => new Promise((resolve) => server.close(() => resolve())),
	};
}
