/**
 * What the route plugins get from the application: the store, the SSRF-checked fetcher and the
 * settings they need. Keeping this narrow lets generation and upload routes evolve independently.
 */
import type { FileStore } from './storage/file-store';
import type { UsageLedger } from './usage/ledger';

export interface RemoteFetchOptions {
	/** Request field the URL came from (`image`, `images[3]`): named in every error. */
	field: string;
	maxBytes: number;
	timeoutMs?: number;
	signal?: AbortSignal;
}

/**
 * Fetches an http(s) URL with the address policy applied to every resolved address and redirect.
 * Failures (scheme, DNS, refused address, non-2xx, time or size limit) throw a 400 naming `field`.
 */
export type RemoteFetcher = (url: URL, options: RemoteFetchOptions) => Promise<Buffer>;

export interface GenerationSettings {
	/** Raw `--providers` / IMAGEGEN_PROVIDERS value, e.g. `p-image=replicate,textimage-v2=ideogram`. */
	providers?: string;
	/** Raw `--prices` / IMAGEGEN_PRICES value, e.g. `textimage-v2=0.08`. */
	prices?: string;
	/** Environment for provider credentials (REPLICATE_API_TOKEN, …). */
	env: NodeJS.ProcessEnv;
	/** Time limit for one generation request, provider included. */
	timeoutMs: number;
}

export interface ServiceContext {
	store: FileStore;
	fetchRemote: RemoteFetcher;
	dataDir: string;
	/** Largest accepted input image (bytes), for fetched URLs and decoded base64 alike. */
	maxInputImageBytes: number;
	generation: GenerationSettings;
	/** Images and cost per API key, model and day. */
	usage: UsageLedger;
}
