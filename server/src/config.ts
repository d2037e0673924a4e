/**
 * The service configuration: every CLI flag, each with an IMAGEGEN_* environment twin. Flags win
 * over the environment. A bad value is reported with the flag's name so the operator can fix it.
 */
import { resolve } from 'node:path';
import { parseTrustProxy, type TrustProxy } from './trust-proxy';
import { parseProviderSelection, type ProviderSelection } from './generation/providers';
import { parsePriceOverrides, type PriceOverrides } from './prices';
import type { StorageDriverName } from './storage/object-storage';

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
	/** Raw `--providers` value; `providerSelection` is its parsed form. */
	providers?: string;
	providerSelection: ProviderSelection;
	/** Raw `--prices` value; `priceOverrides` is its parsed form. */
	prices?: string;
	priceOverrides: PriceOverrides;
	logLevel: LogLevel;
	/** Time limit for fetching one URL input. */
	fetchTimeoutMs: number;
	storage: StorageConfig;
	/** PostgreSQL for metadata, usage and rate limits; undefined → the embedded files in the data dir. */
	databaseUrl?: string;
	fileDelivery: FileDelivery;
	/** How long a SIGTERM waits for in-flight requests before giving up. */
	drainTimeoutMs: number;
	/** How long a connection may stay silent while the server waits for the client's request. */
	idleTimeoutMs: number;
	/** Longest a PostgreSQL statement (or an idle transaction) may take before it fails with a 503. */
	databaseTimeoutMs: number;
	/** Largest picture (width × height, from the header) decoded for a conversion, a fit, an edit input or a provider output. */
	maxImagePixels: number;
	/** The management credential (admin API, /metrics); undefined → those routes do not exist. */
	adminKey?: string;
	/** Wrong keys one client address may send per minute before it gets 429s (0 = no limit). */
	authFailuresPerMinute: number;
	/** The proxies in front whose X-Forwarded-For is believed (addresses, CIDRs); false: none. */
	trustProxy: TrustProxy;
	provenance: ProvenanceConfig;
}

/** How generated images are marked (DESIGN.md, "Provenance"). */
export interface ProvenanceConfig {
	enabled: boolean;
	includePrompt: boolean;
	/** PEM files of the operator's signing certificate (chain) and key; both or neither. */
	certPath?: string;
	keyPath?: string;
}

export type { TrustProxy };

export type FileDelivery = 'proxy' | 'redirect';

export type StorageConfig =
	| { driver: 'disk' }
	| { driver: 's3'; bucket: string; endpoint?: string; region: string; forcePathStyle: boolean; prefix: string };

const STORAGE_DRIVERS: readonly StorageDriverName[] = ['disk', 's3'];
const FILE_DELIVERIES: readonly FileDelivery[] = ['proxy', 'redirect'];
const PROVENANCE_MODES = ['on', 'off'] as const;

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
	{ flag: 'providers', env: 'IMAGEGEN_PROVIDERS', kind: 'string', defaultText: '(sandbox for every model)', description: 'Provider per model, e.g. p-image=replicate,textimage-v2=ideogram; p-image=pruna|replicate is a fallback chain (the next host only when the previous one provably made nothing)' },
	{ flag: 'prices', env: 'IMAGEGEN_PRICES', kind: 'string', defaultText: '(catalog prices)', description: 'Price per image overrides in USD, e.g. textimage-v2=0.08' },
	{ flag: 'log-level', env: 'IMAGEGEN_LOG_LEVEL', kind: 'string', defaultText: 'info', description: `Log level: ${LOG_LEVELS.join(', ')}` },
	{ flag: 'storage', env: 'IMAGEGEN_STORAGE', kind: 'string', defaultText: 'disk', description: 'Where hosted bytes live: disk (the data dir) or s3 (a bucket)' },
	{ flag: 's3-bucket', env: 'IMAGEGEN_S3_BUCKET', kind: 'string', defaultText: '(required with --storage s3)', description: 'Bucket for --storage s3 (credentials from the AWS SDK default chain)' },
	{ flag: 's3-endpoint', env: 'IMAGEGEN_S3_ENDPOINT', kind: 'string', defaultText: '(AWS)', description: 'S3-compatible endpoint URL (R2, MinIO, Ceph RGW, …)' },
	{ flag: 's3-region', env: 'IMAGEGEN_S3_REGION', kind: 'string', defaultText: 'us-east-1', description: 'Region of the bucket' },
	{ flag: 's3-force-path-style', env: 'IMAGEGEN_S3_FORCE_PATH_STYLE', kind: 'boolean', defaultText: 'false', description: 'Path-style bucket URLs (MinIO, Ceph and most self-hosted stores)' },
	{ flag: 's3-prefix', env: 'IMAGEGEN_S3_PREFIX', kind: 'string', defaultText: '(none)', description: 'Key prefix inside the bucket, e.g. imagegen/' },
	{ flag: 'database-url', env: 'IMAGEGEN_DATABASE_URL', kind: 'string', defaultText: '(embedded files in the data dir)', description: 'PostgreSQL URL for file metadata, usage and rate limits (many replicas)' },
	{ flag: 'file-delivery', env: 'IMAGEGEN_FILE_DELIVERY', kind: 'string', defaultText: 'proxy', description: 'proxy (bytes through the server) or redirect (302 to a presigned URL; s3 only)' },
	{ flag: 'drain-timeout-seconds', env: 'IMAGEGEN_DRAIN_TIMEOUT_SECONDS', kind: 'number', defaultText: '30', description: 'On SIGTERM, how long in-flight requests may take to finish' },
	{ flag: 'idle-timeout-seconds', env: 'IMAGEGEN_IDLE_TIMEOUT_SECONDS', kind: 'number', defaultText: '60', description: 'How long a client may send nothing while its request is incomplete (408)' },
	{ flag: 'database-timeout-seconds', env: 'IMAGEGEN_DATABASE_TIMEOUT_SECONDS', kind: 'number', defaultText: '15', description: 'Longest a PostgreSQL statement may run before the request fails with 503' },
	{ flag: 'max-image-pixels', env: 'IMAGEGEN_MAX_IMAGE_PIXELS', kind: 'integer', defaultText: '100000000', description: 'Largest image (width × height) decoded to convert, fit or edit; larger ones are refused (hosting as is stays allowed)' },
	{ flag: 'provenance', env: 'IMAGEGEN_PROVENANCE', kind: 'string', defaultText: 'on', description: 'on: every generated image carries IPTC XMP and a signed C2PA manifest; off: no marks' },
	{ flag: 'provenance-include-prompt', env: 'IMAGEGEN_PROVENANCE_INCLUDE_PROMPT', kind: 'boolean', defaultText: 'false', description: 'Write the prompt into the XMP of generated images' },
	{ flag: 'c2pa-cert', env: 'IMAGEGEN_C2PA_CERT', kind: 'string', defaultText: '(self-made, kept in <data-dir>/c2pa/)', description: 'PEM certificate chain that signs C2PA manifests (signing certificate first)' },
	{ flag: 'c2pa-key', env: 'IMAGEGEN_C2PA_KEY', kind: 'string', defaultText: '(self-made, kept in <data-dir>/c2pa/)', description: 'PEM private key of --c2pa-cert' },
	{ flag: 'admin-key', env: 'IMAGEGEN_ADMIN_KEY', kind: 'string', defaultText: '(none: no admin API, no /metrics)', description: 'Admin credential (at least 16 printable characters) for /v1/admin/* and /metrics' },
	{ flag: 'auth-failures-per-minute', env: 'IMAGEGEN_AUTH_FAILURES_PER_MINUTE', kind: 'integer', defaultText: '30', description: 'Wrong API or admin keys per minute per client address before 429s (0 = unlimited)' },
	{ flag: 'trust-proxy', env: 'IMAGEGEN_TRUST_PROXY', kind: 'string', defaultText: 'off', description: 'Addresses or CIDRs of the proxies in front (e.g. 10.0.0.0/8,127.0.0.1, or loopback): the client address is taken from their X-Forwarded-For' },
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
		'       imagegen-server keys create|list|revoke|rotate …  (manage API keys; see keys --help)',
		'       imagegen-server backup --to <file> [--data-dir <dir>]  (copy the database; see backup --help)',
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

	const providers = text('providers');
	let providerSelection: ProviderSelection = {};
	if (providers !== undefined) {
		try {
			providerSelection = parseProviderSelection(providers);
		} catch (error) {
			throw new ConfigError(`${source('providers')}: ${(error as Error).message}`);
		}
	}

	const oneOf = <T extends string>(flag: FlagName, allowed: readonly T[], fallback: T): T => {
		const value = (text(flag) ?? fallback).toLowerCase();
		if (!(allowed as readonly string[]).includes(value)) {
			throw new ConfigError(`${source(flag)} must be one of ${allowed.join(', ')}; got '${value}'`);
		}
		return value as T;
	};
	const driver = oneOf('storage', STORAGE_DRIVERS, 'disk');
	let storage: StorageConfig = { driver: 'disk' };
	if (driver === 's3') {
		const bucket = text('s3-bucket');
		if (bucket === undefined) throw new ConfigError(`${source('s3-bucket')} is required with --storage s3`);
		// Bucket naming rules shared by AWS, R2, MinIO and Ceph (3–63 characters, lower case, digits, dots, hyphens).
		if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
			throw new ConfigError(`${source('s3-bucket')} must be a bucket name of 3 to 63 lower-case letters, digits, dots or hyphens; got '${bucket}'`);
		}
		const endpoint = text('s3-endpoint');
		if (endpoint !== undefined && !isHttpUrl(endpoint)) {
			throw new ConfigError(`${source('s3-endpoint')} must be an http(s) URL; got '${endpoint}'`);
		}
		const region = text('s3-region') ?? 'us-east-1';
		if (!/^[a-z0-9-]{2,40}$/i.test(region)) throw new ConfigError(`${source('s3-region')} must be a region name such as us-east-1; got '${region}'`);
		const prefix = text('s3-prefix') ?? '';
		if (prefix.startsWith('/') || /[\x00-\x1f\\]/.test(prefix) || prefix.length > 200) {
			throw new ConfigError(`${source('s3-prefix')} must be a key prefix without a leading slash or control characters; got '${prefix}'`);
		}
		storage = { driver: 's3', bucket, endpoint, region, forcePathStyle: boolean('s3-force-path-style'), prefix };
	} else {
		for (const flag of ['s3-bucket', 's3-endpoint', 's3-region', 's3-prefix', 's3-force-path-style'] as const) {
			if (raw[flag] !== undefined) throw new ConfigError(`${source(flag)} applies only with --storage s3`);
		}
	}

	const databaseUrl = text('database-url');
	if (databaseUrl !== undefined && !/^postgres(ql)?:\/\/./.test(databaseUrl)) {
		throw new ConfigError(`${source('database-url')} must be a postgres:// or postgresql:// URL`);
	}

	const fileDelivery = oneOf('file-delivery', FILE_DELIVERIES, 'proxy');
	if (fileDelivery === 'redirect' && storage.driver !== 's3') {
		throw new ConfigError(`${source('file-delivery')} redirect needs --storage s3 (a disk has no presigned URLs); use proxy`);
	}

	const adminKey = text('admin-key');
	// Never echo the value: it is a secret, and this message reaches logs.
	if (adminKey !== undefined && (adminKey.length < 16 || !/^[\x21-\x7e]+$/.test(adminKey))) {
		throw new ConfigError(`${source('admin-key')} must be at least 16 printable characters without spaces`);
	}
	if (adminKey !== undefined && apiKeys.includes(adminKey)) {
		throw new ConfigError(`${source('admin-key')} must differ from every key of ${source('api-keys')}`);
	}

	let trustProxy: TrustProxy;
	try {
		trustProxy = parseTrustProxy(text('trust-proxy'));
	} catch (error) {
		throw new ConfigError(`${source('trust-proxy')} ${(error as Error).message}`);
	}
	const provenanceMode = oneOf('provenance', PROVENANCE_MODES, 'on');
	const certPath = text('c2pa-cert');
	const keyPath = text('c2pa-key');
	if ((certPath === undefined) !== (keyPath === undefined)) {
		throw new ConfigError(`${source(certPath === undefined ? 'c2pa-cert' : 'c2pa-key')} is required with ${source(certPath === undefined ? 'c2pa-key' : 'c2pa-cert')}`);
	}
	const provenance: ProvenanceConfig = {
		enabled: provenanceMode === 'on',
		includePrompt: boolean('provenance-include-prompt'),
		certPath: certPath === undefined ? undefined : resolve(certPath),
		keyPath: keyPath === undefined ? undefined : resolve(keyPath),
	};

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
		providers,
		providerSelection,
		prices,
		priceOverrides,
		logLevel: logLevel as LogLevel,
		storage,
		databaseUrl,
		fileDelivery,
		drainTimeoutMs: Math.round(positive('drain-timeout-seconds', 30) * 1000),
		idleTimeoutMs: Math.round(positive('idle-timeout-seconds', 60) * 1000),
		databaseTimeoutMs: Math.round(positive('database-timeout-seconds', 15) * 1000),
		// 100 MP: a 48 MP phone photo fits twice over, while one decode stays under ~400 MB of RGBA.
		maxImagePixels: integer('max-image-pixels', 100_000_000, 1),
		adminKey,
		authFailuresPerMinute: integer('auth-failures-per-minute', 30, 0, 1_000_000),
		trustProxy,
		provenance,
	};
}

function isHttpUrl(text: string): boolean {
	try {
		const url = new URL(text);
		return url.protocol === 'http:' || url.protocol === 'https:';
	} catch {
		return false;
	}
}

function readFlags(argv: readonly string[]): RawValues | 'help' {
	const values: RawValues = {};
	for (let i = 0; i < argv.length; i++) {
		const argument = argv[i]!;
		if (argument === '--help' || argument === '-h') return 'help';
		const match = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(argument);
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
