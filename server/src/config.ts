/**
 * The service configuration: every CLI flag, each with an IMAGEGEN_* environment twin. Flags win
 * over the environment. A bad value is reported with the flag's name so the operator can fix it.
 */
import { resolve } from 'node:path';
import { parsePriceOverrides, type PriceOverrides } from './prices';

export interface ServiceConfig {
	host: string;
	port: number;
	dataDir: string;
	/** Base of every hosted-file URL; undefined → http://<host>:<bound port>. */
	publicUrl?: string;
	/** Empty → the CLI creates (or reuses) a key in the data dir. */
	apiKeys: string[];
	retentionSeconds: number;
	allowPrivateUrls: boolean;
	maxUploadBytes: number;
	maxJsonBytes: number;
	rateLimitPerMinute: number;
	generationTimeoutMs: number;
	/** Raw `--providers` value, interpreted by the generation module. */
	providers?: string;
	/** Raw `--prices` value; `priceOverrides` is its parsed form. */
	prices?: string;
	priceOverrides: PriceOverrides;
	logLevel: LogLevel;
	/** Time limit for fetching one URL input. */
	fetchTimeoutMs: number;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'ConfigError';
	}
}

type OptionKind = 'string' | 'integer' | 'number' | 'boolean';

interface OptionSpec {
	flag: string;
	env: string;
	kind: OptionKind;
	defaultText: string;
	description: string;
}

/** One row per flag: drives parsing, the environment fallback, --help and the README table. */
export const OPTIONS = [
	{ flag: 'port', env: 'IMAGEGEN_PORT', kind: 'integer', defaultText: '8080', description: 'TCP port to listen on (0 = any free port)' },
	{ flag: 'host', env: 'IMAGEGEN_HOST', kind: 'string', defaultText: '127.0.0.1', description: 'Address to bind (0.0.0.0 for every interface)' },
	{ flag: 'data-dir', env: 'IMAGEGEN_DATA_DIR', kind: 'string', defaultText: './data', description: 'Where hosted files, their metadata and the generated API key live' },
	{ flag: 'public-url', env: 'IMAGEGEN_PUBLIC_URL', kind: 'string', defaultText: 'http://<host>:<port>', description: 'Base of the file URLs handed out (set it behind a proxy)' },
	{ flag: 'api-keys', env: 'IMAGEGEN_API_KEYS', kind: 'string', defaultText: '(generated, kept in <data-dir>/api-key)', description: 'Comma-separated API keys accepted as Bearer tokens' },
	{ flag: 'retention-seconds', env: 'IMAGEGEN_RETENTION_SECONDS', kind: 'integer', defaultText: '86400', description: 'Lifetime of every hosted file' },
	{ flag: 'allow-private-urls', env: 'IMAGEGEN_ALLOW_PRIVATE_URLS', kind: 'boolean', defaultText: 'false', description: 'Let URL inputs reach loopback/private/link-local addresses (tests, LANs)' },
	{ flag: 'max-upload-mb', env: 'IMAGEGEN_MAX_UPLOAD_MB', kind: 'number', defaultText: '512', description: 'Largest upload (multipart, base64 or fetched URL), in MiB' },
	{ flag: 'max-json-mb', env: 'IMAGEGEN_MAX_JSON_MB', kind: 'number', defaultText: '100', description: 'Largest JSON request body, in MiB (base64 inputs travel in it)' },
	{ flag: 'rate-limit-per-minute', env: 'IMAGEGEN_RATE_LIMIT_PER_MINUTE', kind: 'integer', defaultText: '600', description: 'Requests per minute per API key on /v1 (0 = unlimited)' },
	{ flag: 'generation-timeout-seconds', env: 'IMAGEGEN_GENERATION_TIMEOUT_SECONDS', kind: 'number', defaultText: '120', description: 'Time limit for one generation request' },
	{ flag: 'fetch-timeout-seconds', env: 'IMAGEGEN_FETCH_TIMEOUT_SECONDS', kind: 'number', defaultText: '30', description: 'Time limit for fetching one URL input' },
	{ flag: 'providers', env: 'IMAGEGEN_PROVIDERS', kind: 'string', defaultText: '(sandbox for every model)', description: 'Provider per model, e.g. p-image=replicate,textimage-v2=ideogram' },
	{ flag: 'prices', env: 'IMAGEGEN_PRICES', kind: 'string', defaultText: '(catalog prices)', description: 'Price per image overrides in USD, e.g. textimage-v2=0.08' },
	{ flag: 'log-level', env: 'IMAGEGEN_LOG_LEVEL', kind: 'string', defaultText: 'info', description: `Log level: ${LOG_LEVELS.join(', ')}` },
] as const satisfies readonly OptionSpec[];

type FlagName = (typeof OPTIONS)[number]['flag'];
type RawValues = Partial<Record<FlagName, string | true>>;

const MIB = 1024 * 1024;

export function helpText(): string {
	const rows = OPTIONS.map((option) => {
		const name = option.kind === 'boolean' ? `--${option.flag}` : `--${option.flag} <${option.kind === 'string' ? 'value' : 'n'}>`;
		return `  ${name.padEnd(38)}${option.description}\n  ${''.padEnd(38)}env ${option.env}; default ${option.defaultText}`;
	});
	return [
		'Usage: imagegen-server [options]',
		'',
		'Image generation and 24-hour file hosting over HTTP (base path /v1).',
		'',
		'Options (each also read from its environment variable; flags win):',
		...rows,
		'  --help                                Show this text',
		'',
	].join('\n');
}

/** `help` when --help was asked for; otherwise the validated configuration. Throws ConfigError. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServiceConfig | 'help' {
	const fromFlags = readFlags(argv);
	if (fromFlags === 'help') return 'help';
	const raw: RawValues = {};
	for (const option of OPTIONS) {
		const value = fromFlags[option.flag] ?? env[option.env];
		if (value !== undefined && value !== '') raw[option.flag] = value;
	}
	const source = (flag: FlagName) => {
		const option = OPTIONS.find((candidate) => candidate.flag === flag)!;
		return fromFlags[flag] !== undefined ? `--${flag}` : `--${flag} (${option.env})`;
	};

	const integer = (flag: FlagName, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
		const value = raw[flag];
		if (value === undefined) return fallback;
		if (value === true || !/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
			throw new ConfigError(`${source(flag)} must be a whole number from ${min} to ${max}; got '${String(value)}'`);
		}
		return Number(value);
	};
	const positive = (flag: FlagName, fallback: number): number => {
		const value = raw[flag];
		if (value === undefined) return fallback;
		const number = value === true ? NaN : Number(value.trim());
		if (value === true || value.trim() === '' || !Number.isFinite(number) || number <= 0) {
			throw new ConfigError(`${source(flag)} must be a positive number; got '${String(value)}'`);
		}
		return number;
	};
	const text = (flag: FlagName): string | undefined => {
		const value = raw[flag];
		if (value === true) throw new ConfigError(`${source(flag)} needs a value`);
		return value?.trim() || undefined;
	};
	const boolean = (flag: FlagName): boolean => {
		const value = raw[flag];
		if (value === undefined) return false;
		if (value === true) return true;
		const normalized = value.trim().toLowerCase();
		if (['1', 'true', 'yes', 'on'].includes(normalized)) return true;
		if (['0', 'false', 'no', 'off'].includes(normalized)) return false;
		throw new ConfigError(`${source(flag)} must be true or false; got '${value}'`);
	};

	const publicUrl = text('public-url');
	if (publicUrl !== undefined) {
		let url: URL | undefined;
		try {
			url = new URL(publicUrl);
		} catch {
			url = undefined;
		}
		if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
			throw new ConfigError(`${source('public-url')} must be an http(s) URL without query or fragment; got '${publicUrl}'`);
		}
	}

	const apiKeys = (text('api-keys') ?? '')
		.split(',')
		.map((key) => key.trim())
		.filter((key) => key.length > 0);
	for (const key of apiKeys) {
		if (key.length < 8 || /[\s"\\]/.test(key) || !/^[\x21-\x7e]+$/.test(key)) {
			throw new ConfigError(`${source('api-keys')}: every key must be at least 8 printable characters without spaces or quotes`);
		}
	}

	const logLevel = (text('log-level') ?? 'info').toLowerCase();
	if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
		throw new ConfigError(`${source('log-level')} must be one of ${LOG_LEVELS.join(', ')}; got '${logLevel}'`);
	}

	const prices = text('prices');
	let priceOverrides: PriceOverrides = {};
	if (prices !== undefined) {
		try {
			priceOverrides = parsePriceOverrides(prices);
		} catch (error) {
			throw new ConfigError(`${source('prices')}: ${(error as Error).message}`);
		}
	}

	const host = text('host') ?? '127.0.0.1';
	return {
		host,
		port: integer('port', 8080, 0, 65535),
		dataDir: resolve(text('data-dir') ?? './data'),
		publicUrl: publicUrl?.replace(/\/+$/, ''),
		apiKeys,
		retentionSeconds: integer('retention-seconds', 86_400, 1),
		allowPrivateUrls: boolean('allow-private-urls'),
		maxUploadBytes: Math.floor(positive('max-upload-mb', 512) * MIB),
		maxJsonBytes: Math.floor(positive('max-json-mb', 100) * MIB),
		rateLimitPerMinute: integer('rate-limit-per-minute', 600, 0),
		generationTimeoutMs: Math.round(positive('generation-timeout-seconds', 120) * 1000),
		fetchTimeoutMs: Math.round(positive('fetch-timeout-seconds', 30) * 1000),
		providers: text('providers'),
		prices,
		priceOverrides,
		logLevel: logLevel as LogLevel,
	};
}

function readFlags(argv: readonly string[]): RawValues | 'help' {
	const values: RawValues = {};
	for (let i = 0; i < argv.length; i++) {
		const argument = argv[i]!;
		if (argument === '--help' || argument === '-h') return 'help';
		const match = /^--([a-z-]+)(?:=(.*))?$/s.exec(argument);
		const option = match && OPTIONS.find((candidate) => candidate.flag === match[1]);
		if (!match || !option) {
			throw new ConfigError(`Unknown option '${argument}' (see --help)`);
		}
		if (option.kind === 'boolean') {
			values[option.flag] = match[2] ?? true;
			continue;
		}
		const value = match[2] ?? argv[i + 1];
		if (value === undefined || (match[2] === undefined && value.startsWith('--'))) {
			throw new ConfigError(`--${option.flag} needs a value`);
		}
		if (match[2] === undefined) i++;
		values[option.flag] = value;
	}
	return values;
}
