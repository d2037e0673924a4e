/**
 * Server-side fetching of caller-supplied URLs without letting the caller reach our own network.
 * Each hop resolves the host once (through an injectable lookup), checks EVERY resolved address,
 * and pins the connection to the checked address, so a DNS answer cannot change between the check
 * and the connect. Redirects are followed by hand and each hop is checked again.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction as NetLookupFunction } from 'node:net';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { ImageGenError, invalidField } from '../../../core/errors';
import { formatBytes } from '../../../core/units';
import { classifyAddress, isIpLiteral, unbracket, type AddressVerdict } from './address-policy';

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

/** As RemoteFetcher, but answers the body as a stream (uploads of any size). */
export type RemoteOpener = (url: URL, options: OpenRemoteOptions) => Promise<Readable>;

export interface ResolvedAddress {
	address: string;
	family: number;
}

/** Resolves a host name to every address it has (A and AAAA). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface FetchPolicy {
	/** Lifts the address check only; scheme, time and size limits still apply. */
	allowPrivate: boolean;
	timeoutMs: number;
	resolve?: HostResolver;
	maxRedirects?: number;
	/** The address check; the pure classifier unless a test narrows it further. */
	classify?: (address: string) => AddressVerdict;
}

export interface OpenRemoteOptions extends RemoteFetchOptions {
	/** 400 by default (an input the caller chose); uploads answer 413 like their other forms. */
	oversizeStatus?: 400 | 413;
}

const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const systemResolver: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export function createSafeFetcher(policy: FetchPolicy): { fetchRemote: RemoteFetcher; openRemote: RemoteOpener } {
	const openRemote = (url: URL, options: OpenRemoteOptions) => openSafely(url, options, policy);
	const fetchRemote: RemoteFetcher = async (url, options) => {
		const stream = await openRemote(url, options);
		const chunks: Buffer[] = [];
		for await (const chunk of stream) chunks.push(chunk as Buffer);
		return Buffer.concat(chunks);
	};
	return { fetchRemote, openRemote };
}

async function openSafely(start: URL, options: OpenRemoteOptions, policy: FetchPolicy): Promise<Readable> {
	const { field } = options;
	const timeoutMs = options.timeoutMs ?? policy.timeoutMs;
	const timeout = AbortSignal.timeout(timeoutMs);
	const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
	const maxRedirects = policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
	const describeAbort = () =>
		timeout.aborted
			? invalidField(field, `Fetching '${field}' took longer than ${timeoutMs / 1000} s`, 'fetch_timeout')
			: invalidField(field, `Fetching '${field}' was cancelled`, 'fetch_cancelled');

	let url = start;
	for (let hop = 0; ; hop++) {
		if (url.protocol !== 'http:' && url.protocol !== 'https:') {
			throw invalidField(field, `'${field}' leads to the unsupported scheme '${url.protocol}'; only http and https are fetched`, 'unsupported_url_scheme');
		}
		if (url.username || url.password) {
			throw invalidField(field, `'${field}' must not carry credentials in the URL`, 'invalid_url');
		}
		const addresses = await resolveChecked(url, field, policy, signal);
		if (signal.aborted) throw describeAbort();
		const response = await request(url, addresses[0]!, signal).catch((error: unknown) => {
			throw signal.aborted ? describeAbort() : connectError(field, url, error);
		});
		const status = response.statusCode ?? 0;
		if (REDIRECT_STATUSES.has(status) && response.headers.location) {
			response.resume();
			if (hop >= maxRedirects) {
				throw invalidField(field, `'${field}' redirected more than ${maxRedirects} times`, 'too_many_redirects');
			}
			try {
				url = new URL(response.headers.location, url);
			} catch {
				throw invalidField(field, `'${field}' redirected to an invalid URL`, 'invalid_redirect');
			}
			continue;
		}
		if (status < 200 || status > 299) {
			response.resume();
			throw invalidField(field, `Fetching '${field}' failed: ${url.host} answered HTTP ${status}`, 'fetch_failed');
		}
		const tooLarge = () =>
			new ImageGenError(options.oversizeStatus ?? 400, `'${field}' is larger than the limit of ${formatBytes(options.maxBytes)}`, {
				param: field,
				code: 'input_too_large',
			});
		const declared = Number(response.headers['content-length']);
		if (Number.isFinite(declared) && declared > options.maxBytes) {
			response.destroy();
			throw tooLarge();
		}
		return limitStream(response, options.maxBytes, tooLarge, () =>
			signal.aborted ? describeAbort() : invalidField(field, `Fetching '${field}' failed: the connection broke off`, 'fetch_failed'),
		);
	}
}

/**
 * The checks a fetch makes before it connects, for a URL the service will send to rather than
 * fetch (a webhook target): http(s), no credentials, every resolved address allowed unless the
 * policy lifts it. Answers the addresses, the first of which a connection should be pinned to
 * (`pinnedLookup`); a refusal is a 400 naming `field`.
 */
export async function checkTarget(url: URL, field: string, policy: Omit<FetchPolicy, 'maxRedirects'>): Promise<ResolvedAddress[]> {
	if (url.protocol !== 'http:' && url.protocol !== 'https:') {
		throw invalidField(field, `'${field}' must be an http or https URL; got the scheme '${url.protocol}'`, 'unsupported_url_scheme');
	}
	if (url.username || url.password) throw invalidField(field, `'${field}' must not carry credentials in the URL`, 'invalid_url');
	return resolveChecked(url, field, policy, AbortSignal.timeout(policy.timeoutMs));
}

/** A connection's lookup that answers the one address that was checked, whatever the name. */
export function pinnedLookup(pinned: ResolvedAddress): NetLookupFunction {
	return (_hostname, options, callback) => {
		if (options.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, [pinned]);
		else callback(null, pinned.address, pinned.family);
	};
}

async function resolveChecked(url: URL, field: string, policy: Omit<FetchPolicy, 'maxRedirects'>, signal: AbortSignal): Promise<ResolvedAddress[]> {
	const host = unbracket(url.hostname);
	let addresses: ResolvedAddress[];
	if (isIpLiteral(host)) {
		addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
	} else {
		const resolver = policy.resolve ?? systemResolver;
		try {
			addresses = await Promise.race([
				resolver(host),
				new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
			]);
		} catch {
			throw invalidField(field, `The host of '${field}' (${host}) could not be resolved`, 'dns_failed');
		}
		if (addresses.length === 0) {
			throw invalidField(field, `The host of '${field}' (${host}) has no addresses`, 'dns_failed');
		}
	}
	if (!policy.allowPrivate) {
		for (const { address } of addresses) {
			const verdict = (policy.classify ?? classifyAddress)(address);
			if (!verdict.allowed) {
				throw invalidField(
					field,
					`'${field}' points at a refused address: ${verdict.reason}. Only public addresses are fetched`,
					'refused_address',
				);
			}
		}
	}
	return addresses;
}

function request(url: URL, pinned: ResolvedAddress, signal: AbortSignal): Promise<http.IncomingMessage> {
	// The connection goes to the address we checked; TLS still verifies the certificate for the name.
	const lookup = pinnedLookup(pinned);
	const client = url.protocol === 'https:' ? https : http;
	return new Promise((resolve, reject) => {
		const outgoing = client.request(url, {
			method: 'GET',
			lookup,
			signal,
			agent: false,
			headers: { 'user-agent': 'imagegen-server', accept: '*/*', 'accept-encoding': 'identity' },
		});
		outgoing.once('response', resolve);
		outgoing.once('error', reject);
		outgoing.end();
	});
}

function connectError(field: string, url: URL, error: unknown): ImageGenError {
	const code = (error as NodeJS.ErrnoException)?.code;
	const reason = code ? ` (${code})` : '';
	return invalidField(field, `Fetching '${field}' failed: could not get an answer from ${url.host}${reason}`, 'fetch_failed');
}

class ByteLimit extends Transform {
	private seen = 0;
	constructor(
		private readonly maxBytes: number,
		private readonly tooLarge: () => Error,
	) {
		super();
	}
	override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
		this.seen += chunk.length;
		if (this.seen > this.maxBytes) callback(this.tooLarge());
		else callback(null, chunk);
	}
}

function limitStream(
	response: http.IncomingMessage,
	maxBytes: number,
	tooLarge: () => Error,
	broken: () => Error,
): Readable {
	const limited = new ByteLimit(maxBytes, tooLarge);
	response.on('error', () => limited.destroy(broken()));
	response.on('aborted', () => limited.destroy(broken()));
	limited.on('error', () => response.destroy());
	limited.on('close', () => response.destroy());
	response.pipe(limited);
	return limited;
}
