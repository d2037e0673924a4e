/**
 * Every option of the service, one row each (see option-row.ts). Flags win over their IMAGEGEN_*
 * variables; rows are read in this order, so a row may depend on an earlier one (`onlyWith`, and
 * the hosts' settings of provider-options.ts on `--providers`).
 */
import { resolve } from 'node:path';
import { MODEL_IDS, isModelId, type ModelId } from '../../../core/models';
import { option, to } from './option-row';
import { PROVIDER_OPTIONS } from './provider-options';
import { parseModelEntries, parseProviderSelection, type ProviderSelection } from './provider-selection';
import { FILE_DELIVERIES, LOG_LEVELS, PROVENANCE_MODES, STORAGE_ENGINES, type ModelAliases, type PriceOverrides, type ServiceConfig } from './service-config';
import { parseTrustProxy, type TrustProxy } from './trust-proxy';
import { isHttpUrl, listOf, mustBe, oneOf, onOff, parsedBy, positiveNumber, text, wholeNumber } from './value-types';

const MIB = 1024 * 1024;
const mebibytes = (mib: number) => Math.floor(mib * MIB);
const milliseconds = (seconds: number) => Math.round(seconds * 1000);
const ONLY_WITH_S3 = { flag: 'storage', value: 's3' } as const;
/** `--admin-key none`: no admin key is made, so there is no admin API. */
const NO_ADMIN_KEY = 'none';

export const OPTIONS = [
	option({ flag: 'port', type: wholeNumber(0, 65535), default: 8080, help: 'TCP port to listen on (0 = any free port)', into: to('port') }),
	option({ flag: 'host', placeholder: '<address>', type: text, default: '127.0.0.1', help: 'Address to bind (0.0.0.0 for every interface)', into: to('host') }),
	option({ flag: 'data-dir', placeholder: '<path>', type: text, default: './data', help: 'Where hosted files, the embedded database and the generated API and admin keys live', into: (dir) => ({ dataDir: resolve(dir) }) }),
	option({
		flag: 'public-url',
		placeholder: '<url>',
		type: mustBe('an http(s) URL without query or fragment', (url) => isHttpUrl(url) && !new URL(url).search && !new URL(url).hash),
		default: undefined,
		defaultText: 'http://<host>:<port>',
		help: 'Base of the file URLs handed out (set it behind a proxy)',
		into: (url) => ({ publicUrl: url?.replace(/\/+$/, '') }),
	}),
	option({
		flag: 'api-keys',
		placeholder: '<k1,k2>',
		type: parsedBy(parseApiKeys),
		default: [],
		defaultText: '(generated, kept in <data-dir>/api-key)',
		help: 'Comma-separated API keys accepted as Bearer tokens (each at least 8 printable characters)',
		into: to('apiKeys'),
	}),
	option({ flag: 'retention-seconds', type: wholeNumber(1), default: 86_400, help: 'Lifetime of every hosted file', into: to('retentionSeconds') }),
	option({ flag: 'allow-private-urls', type: onOff, default: false, help: 'Let URL inputs reach loopback/private/link-local addresses (tests, LANs)', into: to('allowPrivateUrls') }),
	option({
		flag: 'webhook-allow-private',
		type: onOff,
		default: false,
		help: 'Let webhook_url and --alert-webhook reach loopback/private addresses (a self-hosted n8n on the same machine or network)',
		into: to('webhookAllowPrivate'),
	}),
	option({
		flag: 'alert-webhook',
		placeholder: '<url>',
		type: mustBe('an http(s) URL', isHttpUrl),
		default: undefined,
		defaultText: '(none)',
		help: 'Where budget alerts are POSTed (budget.threshold past 80 %, budget.exhausted), once per key and period; a Slack incoming-webhook URL gets { "text": … }',
		into: to('alertWebhook'),
	}),
	option({ flag: 'max-upload-mb', type: positiveNumber, default: 512, help: 'Largest upload (multipart, base64 or fetched URL), in MiB', into: (mib) => ({ maxUploadBytes: mebibytes(mib) }) }),
	option({ flag: 'max-json-mb', type: positiveNumber, default: 100, help: 'Largest JSON request body, in MiB (base64 inputs travel in it)', into: (mib) => ({ maxJsonBytes: mebibytes(mib) }) }),
	option({ flag: 'rate-limit-per-minute', type: wholeNumber(0), default: 600, help: 'Requests per minute per API key on /v1 (0 = unlimited)', into: to('rateLimitPerMinute') }),
	option({ flag: 'generation-timeout-seconds', type: positiveNumber, default: 120, help: 'Time limit for one generation request', into: (seconds) => ({ generationTimeoutMs: milliseconds(seconds) }) }),
	option({ flag: 'video-timeout-seconds', type: positiveNumber, default: 1800, help: 'Time limit for one video, from its request to the hosted MP4 (hosts take minutes)', into: (seconds) => ({ videoTimeoutMs: milliseconds(seconds) }) }),
	option({ flag: 'max-video-mb', type: positiveNumber, default: 512, help: "Largest video a host may deliver, in MiB: it streams to storage, and a longer download is cut off and the job fails", into: (mib) => ({ maxVideoBytes: mebibytes(mib) }) }),
	option({
		flag: 'job-lease-seconds',
		type: wholeNumber(3, 3_600),
		default: 60,
		help: 'How long a running job stays with the process that runs it without word from it: after a crash, a restart or another replica takes it over once this has passed (3 to 3600)',
		into: (seconds) => ({ jobLeaseMs: milliseconds(seconds) }),
	}),
	option({ flag: 'fetch-timeout-seconds', type: positiveNumber, default: 30, help: 'Time limit for fetching one URL input', into: (seconds) => ({ fetchTimeoutMs: milliseconds(seconds) }) }),
	option({
		flag: 'providers',
		placeholder: '<spec>',
		type: parsedBy(parseProviderSelection),
		default: {} as ProviderSelection,
		defaultText: '(sandbox for every model)',
		help: 'Provider per model, e.g. p-image=replicate,textimage-v2=ideogram,p-video=pruna (p-video: pruna, replicate, upstream or sandbox); p-image=pruna|replicate is a fallback chain (the next host only when the previous one provably made nothing)',
		into: (selection, given) => ({ providers: given, providerSelection: selection }),
	}),
	option({
		flag: 'sandbox-delay-ms',
		type: wholeNumber(0, 600_000),
		default: 0,
		help: 'How long the sandbox waits before it draws, like a slow host (0 to 600000), to try slow generations and asynchronous jobs offline',
		into: to('sandboxDelayMs'),
	}),
	option({
		flag: 'comfyui-workflow',
		placeholder: '<spec>',
		type: parsedBy((text) => parseModelEntries(text, '<workflow file>', (file) => resolve(file), MODEL_IDS)),
		default: {} as Partial<Record<ModelId, string>>,
		defaultText: '(none)',
		help: 'ComfyUI workflow file (API format) per model served by the comfyui provider, e.g. p-image=./flux.json,p-image-edit=./edit.json',
		into: to('comfyuiWorkflows'),
	}),
	...PROVIDER_OPTIONS,
	option({
		flag: 'prices',
		placeholder: '<spec>',
		type: parsedBy(parsePriceOverrides),
		default: {} as PriceOverrides,
		defaultText: '(catalog prices)',
		help: "Price overrides in USD: per image, or for p-video per second at 720p (other resolutions and drafts keep the catalog's proportions), e.g. textimage-v2=0.08,p-video=0.03",
		into: (overrides, given) => ({ prices: given, priceOverrides: overrides }),
	}),
	option({
		flag: 'model-aliases',
		placeholder: '<spec>',
		type: parsedBy(parseModelAliases),
		default: {} as ModelAliases,
		defaultText: '(none)',
		help: "Other clients' model names for ours, e.g. dall-e-3=p-image,gpt-image-1=p-image (listed by /v1/models; a gpt-image… alias answers b64_json unless response_format says otherwise)",
		into: to('modelAliases'),
	}),
	option({ flag: 'log-level', placeholder: '<level>', type: oneOf(LOG_LEVELS), default: 'info', help: `Log level: ${LOG_LEVELS.join(', ')}`, into: to('logLevel') }),
	option({ flag: 'storage', placeholder: '<engine>', type: oneOf(STORAGE_ENGINES), default: 'disk', help: 'Where hosted bytes live: disk (the data dir) or s3 (a bucket)' }),
	option({
		flag: 's3-bucket',
		placeholder: '<name>',
		// Bucket naming rules shared by AWS, R2, MinIO and Ceph (3–63 characters, lower case, digits, dots, hyphens).
		type: mustBe('a bucket name of 3 to 63 lower-case letters, digits, dots or hyphens', (bucket) => /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)),
		default: undefined,
		defaultText: '(required with --storage s3)',
		help: 'Bucket for --storage s3 (credentials from the AWS SDK default chain)',
		onlyWith: { ...ONLY_WITH_S3, required: true },
	}),
	option({
		flag: 's3-endpoint',
		placeholder: '<url>',
		type: mustBe('an http(s) URL', isHttpUrl),
		default: undefined,
		defaultText: '(AWS)',
		help: 'S3-compatible endpoint URL (R2, MinIO, Ceph RGW, …)',
		onlyWith: ONLY_WITH_S3,
	}),
	option({
		flag: 's3-region',
		placeholder: '<region>',
		type: mustBe('a region name such as us-east-1', (region) => /^[a-z0-9-]{2,40}$/i.test(region)),
		default: 'us-east-1',
		help: 'Region of the bucket',
		onlyWith: ONLY_WITH_S3,
	}),
	option({ flag: 's3-force-path-style', type: onOff, default: false, help: 'Path-style bucket URLs (MinIO, Ceph and most self-hosted stores)', onlyWith: ONLY_WITH_S3 }),
	option({
		flag: 's3-prefix',
		placeholder: '<prefix>',
		type: mustBe('a key prefix without a leading slash or control characters', (prefix) => !prefix.startsWith('/') && !/[\x00-\x1f\\]/.test(prefix) && prefix.length <= 200),
		default: '',
		defaultText: '(none)',
		help: 'Key prefix inside the bucket, e.g. imagegen/',
		onlyWith: ONLY_WITH_S3,
	}),
	option({
		flag: 'database-url',
		placeholder: '<url>',
		// Never echo the value: it holds the database password, and this message reaches logs.
		type: mustBe('a postgres:// or postgresql:// URL', (url) => /^postgres(ql)?:\/\/./.test(url), true),
		default: undefined,
		defaultText: '(the embedded database in the data dir)',
		help: 'PostgreSQL URL for file metadata, usage and rate limits (many replicas)',
		into: to('databaseUrl'),
	}),
	option({ flag: 'file-delivery', placeholder: '<mode>', type: oneOf(FILE_DELIVERIES), default: 'proxy', help: 'proxy (bytes through the server) or redirect (302 to a presigned URL; s3 only)', into: to('fileDelivery') }),
	option({ flag: 'drain-timeout-seconds', type: positiveNumber, default: 30, help: 'On SIGTERM, how long in-flight requests may take to finish before the process exits', into: (seconds) => ({ drainTimeoutMs: milliseconds(seconds) }) }),
	option({ flag: 'idle-timeout-seconds', type: positiveNumber, default: 60, help: 'How long a client may send nothing while its request is incomplete (then 408), or read nothing of its answer, before the connection is closed', into: (seconds) => ({ idleTimeoutMs: milliseconds(seconds) }) }),
	option({ flag: 'database-timeout-seconds', type: positiveNumber, default: 15, help: 'Longest a PostgreSQL statement (or a transaction left idle) may run before the request fails with 503', into: (seconds) => ({ databaseTimeoutMs: milliseconds(seconds) }) }),
	// 100 MP: a 48 MP phone photo fits twice over, while one decode stays under ~400 MB of RGBA.
	option({
		flag: 'max-image-pixels',
		type: wholeNumber(1),
		default: 100_000_000,
		help: 'Largest image (width × height) decoded to convert, fit or edit; larger ones are refused (hosting as is stays allowed)',
		into: to('maxImagePixels'),
	}),
	option({
		flag: 'admin-key',
		placeholder: '<secret>',
		// Never echo the value: it is a secret, and this message reaches logs. `none` is shorter than
		// any key may be, so it can only mean the word.
		type: mustBe(`at least 16 printable characters without spaces, or ${NO_ADMIN_KEY}`, (key) => key === NO_ADMIN_KEY || (key.length >= 16 && /^[\x21-\x7e]+$/.test(key)), true),
		default: undefined,
		defaultText: '(generated, kept in <data-dir>/admin-key)',
		help: `Admin credential (at least 16 printable characters) for /v1/admin/*, /metrics and the operator page /admin, or ${NO_ADMIN_KEY} to run without them. Give it in the variable: a flag shows in the process list`,
		into: (key): Pick<ServiceConfig, 'adminKey' | 'noAdminKey'> => (key === NO_ADMIN_KEY ? { noAdminKey: true } : { adminKey: key }),
	}),
	option({
		flag: 'auth-failures-per-minute',
		type: wholeNumber(0, 1_000_000),
		default: 30,
		help: 'Wrong API or admin keys one client address may send per minute before it gets 429s (0 = unlimited)',
		into: to('authFailuresPerMinute'),
	}),
	option({
		flag: 'trust-proxy',
		placeholder: '<addrs>',
		type: parsedBy(parseTrustProxy, ' '),
		default: false as TrustProxy,
		defaultText: 'off',
		help: 'Addresses or CIDRs of the proxies in front (e.g. 10.0.0.0/8,127.0.0.1, or loopback): the client address is taken from their X-Forwarded-For',
		into: to('trustProxy'),
	}),
	// The five provenance rows combine into one field: parse-config.ts assembles them.
	option({ flag: 'provenance', placeholder: '<on|off>', type: oneOf(PROVENANCE_MODES), default: 'on', help: 'on: every generated image carries IPTC XMP and a signed C2PA manifest; off: no marks' }),
	option({ flag: 'provenance-include-prompt', type: onOff, default: false, help: 'Write the prompt into the XMP of generated images' }),
	option({
		flag: 'marking-threads',
		type: wholeNumber(0, 16),
		default: undefined,
		defaultText: '1 per core beyond the first, up to 2',
		help: 'Worker threads that mark images of 256 KB and more (0: the event loop marks every image)',
	}),
	option({
		flag: 'c2pa-cert',
		placeholder: '<file>',
		type: text,
		default: undefined,
		defaultText: '(self-made, kept in <data-dir>/c2pa/)',
		help: 'PEM certificate chain that signs C2PA manifests (signing certificate first); with --c2pa-key',
	}),
	option({
		flag: 'c2pa-key',
		placeholder: '<file>',
		type: text,
		default: undefined,
		defaultText: '(self-made, kept in <data-dir>/c2pa/)',
		help: 'PEM private key of --c2pa-cert (EC P-256/384/521, RSA or Ed25519)',
	}),
	option({
		flag: 'provenance-record-days',
		type: wholeNumber(0, 36_500),
		default: 365,
		help: "Days the record a generated image's watermark names (generation, model, key) is kept beyond the file's retention",
		into: to('provenanceRecordDays'),
	}),
] as const;

/** Throws without echoing the keys: they are secrets, and the message reaches logs. */
function parseApiKeys(text: string): string[] {
	const keys = listOf(text);
	if (keys.some((key) => key.length < 8 || /[\s"\\]/.test(key) || !/^[\x21-\x7e]+$/.test(key))) {
		throw new Error('every key must be at least 8 printable characters without spaces or quotes');
	}
	return keys;
}

/** `--model-aliases dall-e-3=p-image`: an alias is any name that is not one of our models, each given once. */
function parseModelAliases(text: string): ModelAliases {
	const aliases: ModelAliases = {};
	for (const entry of listOf(text)) {
		const match = /^([A-Za-z0-9][A-Za-z0-9._:-]*)\s*=\s*(\S+)$/.exec(entry);
		if (!match) throw new Error(`'${entry}' is not of the form <alias>=<model>`);
		const [, alias, model] = match as unknown as [string, string, string];
		if (!isModelId(model)) throw new Error(`unknown model '${model}' (known: ${MODEL_IDS.join(', ')})`);
		if (isModelId(alias)) throw new Error(`'${alias}' is one of the models already, not an alias`);
		if (Object.hasOwn(aliases, alias)) throw new Error(`${alias} is listed twice`);
		aliases[alias] = model;
	}
	return aliases;
}

/** `--prices p-image=0.004,textimage-v2=0.08`: an operator who pays a provider a different rate states it. */
function parsePriceOverrides(text: string): PriceOverrides {
	return parseModelEntries(text, '<usd per image, or per second of video>', (price, model) => {
		if (!/^\d+(\.\d+)?$/.test(price) || !Number.isFinite(Number(price))) throw new Error(`the price of '${model}' must be a non-negative number of USD; got '${price}'`);
		return Number(price);
	});
}
