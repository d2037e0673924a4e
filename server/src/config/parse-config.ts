/**
 * The service configuration from the option rows: flags win over their variables, and a bad value
 * is reported with the flag's name (or the variable's, for one without a flag) so the operator can fix it.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { OptionRow } from './option-row';
import { OPTIONS } from './options';
import { providerSettings } from './provider-options';
import { argOptions, ConfigError, readOptions, type InfoRequest, type OptionValues } from './read-options';
import type { ProvenanceConfig, ServiceConfig, StorageConfig } from './service-config';

type Row = (typeof OPTIONS)[number];
/** The fields the rows' `into` set (distributed over the rows); the compiler checks that these and storage make a whole ServiceConfig. */
type FieldsOf<R> = R extends OptionRow<string, unknown, infer Field> ? Field : never;
type Values = OptionValues<typeof OPTIONS>;

/** The service's options for node:util's parseArgs, for a command that passes them on to parseConfig (`keys`). */
export const SERVICE_ARG_OPTIONS = argOptions(OPTIONS);

/** `help` or `version` when --help or --version was asked for; otherwise the validated configuration. Throws ConfigError. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServiceConfig | InfoRequest {
	const read = readOptions(OPTIONS, argv, env);
	if (typeof read === 'string') return read;
	const fields: Partial<ServiceConfig> = {};
	for (const row of OPTIONS as readonly OptionRow[]) {
		Object.assign(fields, row.into?.(read.values[row.flag as Row['flag']], read.texts[row.flag as Row['flag']]));
	}
	checkPairs(read.values, read.nameOf);
	const config: ServiceConfig = {
		...(fields as Pick<ServiceConfig, FieldsOf<Row>>),
		storage: storageConfig(read.values),
		provenance: provenanceConfig(read.values),
		providerSettings: providerSettings(read.values),
	};
	checkCombinations(config, read.nameOf);
	return config;
}

function storageConfig(values: Values): StorageConfig {
	if (values.storage === 'disk') return { engine: 'disk' };
	return {
		engine: 's3',
		// Required with s3: readOptions has refused its absence.
		bucket: values['s3-bucket']!,
		endpoint: values['s3-endpoint'],
		region: values['s3-region'],
		forcePathStyle: values['s3-force-path-style'],
		prefix: values['s3-prefix'],
	};
}

function provenanceConfig(values: Values): ProvenanceConfig {
	const certPath = values['c2pa-cert'];
	const keyPath = values['c2pa-key'];
	return {
		enabled: values.provenance === 'on',
		includePrompt: values['provenance-include-prompt'],
		markingThreads: values['marking-threads'] ?? defaultMarkingThreads(),
		certPath: certPath === undefined ? undefined : resolve(certPath),
		keyPath: keyPath === undefined ? undefined : resolve(keyPath),
	};
}

/**
 * One core stays with the event loop. On Node 22 too: with the C2PA engine's memory in a worker,
 * a run of large inline answers peaks lower than with the event loop marking them.
 */
function defaultMarkingThreads(): number {
	return Math.max(1, Math.min(2, availableParallelism() - 1));
}

/** Options that are given together or not at all. */
function checkPairs(values: Values, nameOf: (flag: Row['flag']) => string): void {
	const cert = values['c2pa-cert'] !== undefined;
	const key = values['c2pa-key'] !== undefined;
	if (cert !== key) {
		const [missing, given] = cert ? (['c2pa-key', 'c2pa-cert'] as const) : (['c2pa-cert', 'c2pa-key'] as const);
		throw new ConfigError(`${nameOf(missing)} is required with ${nameOf(given)}`);
	}
}

/** Rules between options, after each one is valid on its own. */
function checkCombinations(config: ServiceConfig, nameOf: (flag: Row['flag']) => string): void {
	if (config.fileDelivery === 'redirect' && config.storage.engine !== 's3') {
		throw new ConfigError(`${nameOf('file-delivery')} redirect needs --storage s3 (a disk has no presigned URLs); use proxy`);
	}
	if (config.adminKey !== undefined && config.apiKeys.includes(config.adminKey)) {
		throw new ConfigError(`${nameOf('admin-key')} must differ from every key of ${nameOf('api-keys')}`);
	}
}
