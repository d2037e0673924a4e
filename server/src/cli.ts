#!/usr/bin/env node
/**
 * imagegen-server: parses flags and environment, makes sure there is an API key and (unless
 * `--admin-key none`) an admin key, starts the service and prints where it listens. `imagegen-server keys …` manages keys instead (cli/keys-cli.ts),
 * `imagegen-server backup …` copies the data dir's database (cli/backup-cli.ts), `imagegen-server verify FILE` checks an image's
 * marks (cli/verify-cli.ts). Exit codes: 0 clean stop, 1 failed to start, 2 bad options.
 */
// First: sizes libuv's thread pool before anything uses it.
import './runtime/thread-pool';
import { mkdir } from 'node:fs/promises';
import { ADMIN_KEY_FILE, API_KEY_FILE, loadOrCreateKey } from './cli/key-files';
import { createService } from './app';
import { ConfigError, helpText, parseConfig, type InfoRequest, type ServiceConfig } from './config';
import { serviceVersion } from './runtime/service-version';
import { buildProviderTable, type ProviderTable } from './generation/providers';
import { startTracing, type Tracing } from './telemetry/start-tracing';

type Service = Awaited<ReturnType<typeof createService>>;

async function main(): Promise<void> {
	if (await ranCommand(process.argv[2])) return;
	const config = parseOrExit(process.argv.slice(2));
	if (config === undefined) return;
	let providers: ProviderTable;
	try {
		// Before the data dir or a key file is made: a selected provider without a setting it needs fails here, not per request.
		providers = buildProviderTable(config);
	} catch (error) {
		process.stderr.write(`imagegen-server: ${(error as Error).message}\n`);
		process.exit(2);
	}
	await mkdir(config.dataDir, { recursive: true });

	const lines = await keysMadeIfMissing(config);

	// Before the app is made: the Fastify instrumentation joins each instance as it is created.
	const tracing = await startTracing(process.env);
	const service = await createService(config, { providers });
	const { address, publicUrl } = await service.listen();
	// Before the ready line: whoever waits for it may stop the service at once.
	stopOnSignals(service, config, tracing);
	lines.push(`imagegen-server listening on ${address}`, `  API base URL: ${publicUrl}/v1`);
	if (config.adminKey !== undefined) lines.push(`  operator page: ${publicUrl}/admin`);
	lines.push(`  data dir: ${config.dataDir}`, `  ${service.app.provenance.startLine}`);
	process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * The API key and the admin key that are not configured, made (or read again) in the data dir, so
 * that a first start has a working API and operator page; answers the banner's lines about them.
 * A configured admin key is never printed: it may be kept out of sight on purpose.
 */
async function keysMadeIfMissing(config: ServiceConfig): Promise<string[]> {
	const lines: string[] = [];
	const keptIn = (stored: { created: boolean; path: string }) => `${stored.created ? 'created and stored' : 'read'} in ${stored.path}`;
	if (config.apiKeys.length === 0) {
		const stored = await loadOrCreateKey(config.dataDir, API_KEY_FILE);
		config.apiKeys = [stored.key];
		lines.push(`API key: ${stored.key}`, `  (${keptIn(stored)}; set --api-keys to use your own)`);
	}
	if (config.adminKey === undefined && !config.noAdminKey) {
		const stored = await loadOrCreateKey(config.dataDir, ADMIN_KEY_FILE);
		config.adminKey = stored.key;
		lines.push(
			`Admin key: ${stored.key}`,
			`  (${keptIn(stored)}; for the operator page and /metrics; set IMAGEGEN_ADMIN_KEY to use your own, or to none for no admin API)`,
		);
	}
	return lines;
}

/** `keys …`, `backup …` and `verify …` are commands of their own, loaded only when asked for; answers whether one ran. */
async function ranCommand(command: string | undefined): Promise<boolean> {
	const output = { out: (text: string) => process.stdout.write(text), err: (text: string) => process.stderr.write(text) };
	if (command === 'keys') {
		const { runKeysCommand } = await import('./cli/keys-cli');
		process.exitCode = await runKeysCommand(process.argv.slice(3), process.env, output);
		return true;
	}
	if (command === 'backup') {
		const { runBackupCommand } = await import('./cli/backup-cli');
		process.exitCode = runBackupCommand(process.argv.slice(3), process.env, output);
		return true;
	}
	if (command === 'verify') {
		const { runVerifyCommand } = await import('./cli/verify-cli');
		process.exitCode = await runVerifyCommand(process.argv.slice(3), process.env, output);
		return true;
	}
	return false;
}

/** The service's configuration; undefined when `--help` or `--version` was answered instead. Bad options exit with 2. */
function parseOrExit(args: string[]): ServiceConfig | undefined {
	let parsed: ServiceConfig | InfoRequest;
	try {
		parsed = parseConfig(args, process.env);
	} catch (error) {
		if (error instanceof ConfigError) {
			process.stderr.write(`imagegen-server: ${error.message}\n`);
			process.exit(2);
		}
		throw error;
	}
	if (parsed === 'help') {
		process.stdout.write(helpText());
		return undefined;
	}
	if (parsed === 'version') {
		process.stdout.write(`imagegen-server ${serviceVersion()}\n`);
		return undefined;
	}
	return parsed;
}

/**
 * SIGTERM and SIGINT drain the requests in flight, then send the spans not yet exported, then
 * exit; past the drain time requests are cut off.
 */
function stopOnSignals(service: Service, config: ServiceConfig, tracing: Tracing | undefined): void {
	let stopping = false;
	const stop = (signal: NodeJS.Signals) => {
		if (stopping) return;
		stopping = true;
		service.app.log.info(`received ${signal}: no new requests; waiting up to ${config.drainTimeoutMs / 1000} s for those in flight`);
		// Requests still running when the drain time is up are cut off: the orchestrator's own kill
		// deadline would do it less gracefully (no ledger flush at all).
		const forced = setTimeout(() => {
			service.app.log.error(`requests still running after ${config.drainTimeoutMs / 1000} s; exiting anyway`);
			// Usage lines already accepted still get their (short) chance to reach the ledger.
			const exit = () => process.exit(1);
			setTimeout(exit, 2_000).unref();
			service.app.usageLedger.close().finally(exit);
		}, config.drainTimeoutMs);
		forced.unref();
		const drainStarted = performance.now();
		service.close().then(
			async () => {
				// The requests' last spans ended with them: sent before the process goes.
				await tracing?.shutdown().catch((error: unknown) => service.app.log.error({ err: error }, 'sending the last spans failed'));
				// The last line of a clean stop: whoever reads the log sees it ended on purpose, not by a crash or a kill.
				const drainedSeconds = ((performance.now() - drainStarted) / 1000).toFixed(1);
				service.app.log.info(`stopped: requests in flight drained in ${drainedSeconds} s`);
				process.exit(0);
			},
			(error: unknown) => {
				service.app.log.error({ err: error }, 'shutting down failed');
				process.exit(1);
			},
		);
	};
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
	const message = error instanceof Error ? error.message : String(error);
	process.stderr.write(`imagegen-server: failed to start: ${message}\n`);
	process.exit(1);
});
