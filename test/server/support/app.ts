/**
 * The service built in process (no child process, no build) on a temporary data dir and a free
 * loopback port. `startInProcessServer` has the surface of `startServer` (helpers/server.ts) —
 * origin, API key, data dir, what it logged, stop — so a suite whose subject is the HTTP behaviour
 * switches with one line; `buildTestApp` also hands over the Fastify instance, for wiring tests and
 * `app.inject`. What needs a real process (signals, crashes, restarts of the CLI, its printed
 * lines, exit codes) stays with `startServer`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createService, type ServiceParts } from '../../../server/src/app';
import { parseConfig, type ServiceConfig } from '../../../server/src/config';
import { TEST_API_KEY, type ServiceUnderTest, type StartOptions } from '../../helpers/server';

export interface InProcessServer extends ServiceUnderTest {
	app: FastifyInstance;
	config: ServiceConfig;
}

/**
 * `startServer`'s options, in process: `args` are the CLI's flags, `env` its environment (added to
 * this process's own), `parts` what the app would otherwise build or choose itself (the providers,
 * or only their pace). Logs at the CLI's level into `output()`.
 */
export async function startInProcessServer(options: Omit<StartOptions, 'apiKey'> & { apiKey?: string; parts?: ServiceParts } = {}): Promise<InProcessServer> {
	const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'imagegen-test-'));
	const apiKey = options.apiKey ?? TEST_API_KEY;
	const env = { ...process.env, ...options.env };
	const config = parseConfig(['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--api-keys', apiKey, ...(options.args ?? [])], env);
	if (typeof config === 'string') throw new Error(`startInProcessServer: --${config} is not a service to start`);
	mkdirSync(config.dataDir, { recursive: true });
	let output = '';
	const service = await createService(config, { logStream: { write: (line) => void (output += line) }, ...options.parts });
	const { address: origin } = await service.listen();
	let stopped: Promise<void> | undefined;
	return {
		app: service.app,
		config,
		origin,
		baseUrl: `${origin}/v1`,
		apiKey,
		dataDir,
		output: () => output,
		stop: async ({ removeData = false } = {}) => {
			stopped ??= service.close();
			await stopped;
			if (removeData) rmSync(dataDir, { recursive: true, force: true });
		},
	};
}

export interface InProcessApp {
	app: FastifyInstance;
	config: ServiceConfig;
	dataDir: string;
	origin: string;
	/** `authorization` header of the test key. */
	auth: { authorization: string };
	/** A request to the app through `app.inject` (no socket); `path` may also be one of its file URLs. */
	request(path: string, init?: RequestInit): Promise<Response>;
	/** Closes the app (flushing the ledger) and removes the data dir. */
	close(): Promise<void>;
}

/** `parts`: what the app would otherwise build itself, e.g. providers pointed at loopback stand-ins. */
export async function buildTestApp(args: string[] = [], parts: ServiceParts = {}): Promise<InProcessApp> {
	const server = await startInProcessServer({ args: ['--log-level', 'silent', ...args], parts });
	return {
		app: server.app,
		config: server.config,
		dataDir: server.dataDir,
		origin: server.origin,
		auth: { authorization: `Bearer ${TEST_API_KEY}` },
		request: (path, init) => inject(server.app, path.startsWith(server.origin) ? path.slice(server.origin.length) : path, init),
		close: () => server.stop({ removeData: true }),
	};
}

/** `fetch`'s call and answer, served by `app.inject`. */
export async function inject(app: FastifyInstance, path: string, init: RequestInit = {}): Promise<Response> {
	const request = new Request(`http://in-process${path}`, init);
	const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
	const answer = await app.inject({
		method: request.method as 'GET',
		url: path,
		headers: Object.fromEntries(request.headers),
		...(body ? { payload: body } : {}),
	});
	const headers = new Headers();
	for (const [name, value] of Object.entries(answer.headers)) {
		for (const one of Array.isArray(value) ? value : [value]) if (one !== undefined) headers.append(name, String(one));
	}
	const empty = answer.statusCode === 204 || answer.statusCode === 304 || request.method === 'HEAD';
	return new Response(empty ? null : answer.rawPayload, { status: answer.statusCode, headers });
}
