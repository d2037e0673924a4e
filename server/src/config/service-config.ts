/** The configuration the service runs with, as parseConfig assembles it from the option rows. */
import type { ModelId } from '../../../core/models';
import type { ProviderSettings } from './provider-options';
import type { CatalogModelId, ProviderSelection } from './provider-selection';
import type { TrustProxy } from './trust-proxy';

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
	/** Webhook targets (`webhook_url`, the alert webhook) may be loopback or private addresses. */
	webhookAllowPrivate: boolean;
	/** Where budget alerts go; undefined → none are sent. */
	alertWebhook?: string;
	maxUploadBytes: number;
	maxJsonBytes: number;
	rateLimitPerMinute: number;
	generationTimeoutMs: number;
	/** `--video-timeout-seconds`: one video's time limit, from its request to the hosted MP4. */
	videoTimeoutMs: number;
	/** `--max-video-mb`: the largest video a host may deliver. */
	maxVideoBytes: number;
	/** Raw `--providers` value; `providerSelection` is its parsed form. */
	providers?: string;
	providerSelection: ProviderSelection;
	/** How long the sandbox provider waits before it draws (`--sandbox-delay-ms`). */
	sandboxDelayMs: number;
	/** `--job-lease-seconds`: how long a running job's owner may be silent before another process takes it over. */
	jobLeaseMs: number;
	/** `--comfyui-workflow`: each model's ComfyUI workflow file, resolved against the working directory. */
	comfyuiWorkflows: Partial<Record<ModelId, string>>;
	/** Keys, base URLs and the like of the hosts (config/provider-options.ts); those of providers `--providers` does not name stay at their defaults. */
	providerSettings: ProviderSettings;
	/** Raw `--prices` value; `priceOverrides` is its parsed form. */
	prices?: string;
	priceOverrides: PriceOverrides;
	/** `--model-aliases`: other clients' model names (dall-e-3, gpt-image-1) and the model each means. */
	modelAliases: ModelAliases;
	logLevel: LogLevel;
	/** Time limit for fetching one URL input. */
	fetchTimeoutMs: number;
	storage: StorageConfig;
	/** PostgreSQL for metadata, usage and rate limits; undefined → the embedded database in the data dir. */
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
	/** The management credential (admin API, /metrics, /admin); undefined → those routes do not exist, and the CLI makes (or reuses) one in the data dir unless `noAdminKey`. */
	adminKey?: string;
	/** `--admin-key none`: the CLI makes no admin key, so the service runs without an admin API. */
	noAdminKey?: boolean;
	/** Wrong keys one client address may send per minute before it gets 429s (0 = no limit). */
	authFailuresPerMinute: number;
	/** The proxies in front whose X-Forwarded-For is believed (addresses, CIDRs); false: none. */
	trustProxy: TrustProxy;
	provenance: ProvenanceConfig;
	/** Days a provenance record is kept beyond its file's retention (provenance/provenance-records.ts). */
	provenanceRecordDays: number;
}

/** An alias → the catalog model it stands for. */
export type ModelAliases = Record<string, ModelId>;

/**
 * The operator's prices in USD where they differ from the catalog's (`--prices`): per image, and
 * for a video model per second at its lowest resolution (core/video-models.ts, videoPricePerSecond).
 */
export type PriceOverrides = Partial<Record<CatalogModelId, number>>;

/** How generated images are marked (docs/provenance.md). */
export interface ProvenanceConfig {
	enabled: boolean;
	includePrompt: boolean;
	/** PEM files of the operator's signing certificate (chain) and key; both or neither. */
	certPath?: string;
	keyPath?: string;
	/** Worker threads marking large images; 0 marks every image on the event loop. */
	markingThreads: number;
}

export const PROVENANCE_MODES = ['on', 'off'] as const;

export const STORAGE_ENGINES = ['disk', 's3'] as const;
export type StorageEngineName = (typeof STORAGE_ENGINES)[number];

export const FILE_DELIVERIES = ['proxy', 'redirect'] as const;
export type FileDelivery = (typeof FILE_DELIVERIES)[number];

export type StorageConfig =
	| { engine: 'disk' }
	| { engine: 's3'; bucket: string; endpoint?: string; region: string; forcePathStyle: boolean; prefix: string };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
