/**
 * The Node.js version check of the service's committed bin, and a Node on this machine that it
 * refuses, for suites that check what users launch with such a Node.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const SERVER_BIN = join(__dirname, '..', '..', 'server', 'bin', 'imagegen-server.js');

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const { SUPPORTED_NODE, unsupportedNodeMessage, missingStartSettings } = require(SERVER_BIN) as {
	SUPPORTED_NODE: string;
	unsupportedNodeMessage(version: string): string | undefined;
	missingStartSettings(started: { platform: string; env: Record<string, string | undefined>; execArgv: string[]; glibc(): boolean }): {
		variables: Record<string, string>;
		flags: string[];
	};
};

/**
 * The Node that started npm (`npm test` runs the suites under Nodes of its own), else the system's,
 * when the packages do not support it; undefined when this machine has none such.
 */
export function unsupportedNodeOnMachine(): { path: string; version: string } | undefined {
	for (const path of [process.env.npm_node_execpath, '/usr/local/bin/node', '/usr/bin/node']) {
		if (!path || !existsSync(path)) continue;
		const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
		if (unsupportedNodeMessage(version)) return { path, version };
	}
	return undefined;
}
