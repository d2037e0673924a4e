#!/usr/bin/env node
/**
 * imagegen-server: parses flags and environment, makes sure there is an API key, starts the
 * service and prints where it listens. Exit codes: 0 clean stop, 1 failed to start, 2 bad options.
 */
import { mkdir } from 'node:fs/promises';
import { loadOrCreateApiKey } from './api-key-file';
import { createService } from './app';
import { ConfigError, helpText, parseConfig, type ServiceConfig } from './config';
import { buildProviderTable } from './generation/providers';

async function main(): Promise<void> {
	let parsed: ServiceConfig | 'help';
	try {
		parsed = parseConfig(process.argv.slice(2), process.env);
	} catch (error) {
		if (error instanceof ConfigError) {
			process.stderr.write(`imagegen-server: ${error.message}\n`);
			process.exit(2);
		}
		throw error;
	}
	if (parsed === 'help') {
		process.stdout.write(helpText());
		return;
	}
	const config = parsed;
	try {
		// Provider settings live in the environment (keys, base URLs): a gap fails here, not per request.
		buildProviderTable(config.providers, process.env);
	} catch (error) {
		process.stderr.write(`imagegen-server: ${(error as Error).message}\n`);
		process.exit(2);
	}
	await mkdir(config.dataDir, { recursive: true });

	const lines: string[] = [];
	if (config.apiKeys.length === 0) {
		const stored = await loadOrCreateApiKey(config.dataDir);
		config.apiKeys = [stored.key];
		lines.push(`API key: ${stored.key}`, `  (${stored.created ? 'created and stored' : 'read'} in ${stored.path}; set --api-keys to use your own)`);
	}

	const service = await createService(config);
	const { address, publicUrl } = await service.listen();
	lines.push(`imagegen-server listening on ${address}`, `  API base URL: ${publicUrl}/v1`, `  data dir: ${config.dataDir}`);
	process.stdout.write(`${lines.join('\n')}\n`);

	let stopping = false;
	const stop = (signal: NodeJS.Signals) => {
		if (stopping) return;
		stopping = true;
		service.app.log.info(`received ${signal}, shutting down`);
		const forced = setTimeout(() => process.exit(1), 10_000);
		forced.unref();
		service.close().then(
			() => process.exit(0),
			() => process.exit(1),
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
