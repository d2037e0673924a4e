/**
 * The service built in process (no child process) on a temporary data dir and a free loopback
 * port, for quick tests of wiring: hooks, scopes, decorators. (`app.inject` cannot run under Jest
 * here: light-my-request needs the ES-module-only `cookie` 2, which Jest's CommonJS loader refuses
 * on Node 20; `request` below is the same call over loopback.) Behaviour end to end stays in the
 * CLI-driven suites.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createService, type ServiceParts } from '../../../server/src/app';
import { parseConfig, type ServiceConfig } from '../../../server/src/config';
import { TEST_API_KEY } from '../../helpers/server';

export interface InProcessApp {
	app: FastifyInstance;
	config: ServiceConfig;
	dataDir: string;
	origin: string;
	/** `authorization` header of the test key. */
	auth: { authorization: string };
	/** A request to the app; `path` may also be one of its file URLs. */
	request(path: string, init?: RequestInit): Promise<Response>;
	/** Closes the app (flushing the ledger) and removes the data dir. */
	close(): Promise<void>;
}

/** `parts`: what the app would otherwise build itself, e.g. providers pointed at loopback stand-ins. */
export async function buildTestApp(args: string[] = [], parts: ServiceParts = {}): Promise<InProcessApp> {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-app-'));
	const config = parseConfig(['--data-dir', dataDir, '--api-keys', TEST_API_KEY, '--host', '127.0.0.1', '--port', '0', '--log-level', 'silent', ...args], {});
	if (typeof config === 'string') throw new Error(`unreachable: --${config} was not asked for`);
	const service = await createService(config, parts);
	const { address: origin } = await service.listen();
	return {
		app: service.app,
		config,
		dataDir,
		origin,
		auth: { authorization: `Bearer ${TEST_API_KEY}` },
		request: (path, init) => fetch(path.startsWith('http') ? path : `${origin}${path}`, init),
		close: async () => {
			await service.close();
			rmSync(dataDir, { recursive: true, force: true });
		},
	};
}
