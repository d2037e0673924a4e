/**
 * HTTP calls to model hosts: bounded retries on 429 and 5xx that honour Retry-After (the policy
 * the nodes use too; a 429 without it waits what the host's words say, at least 10 s, and only
 * while the generation's time limit allows; a call that creates a job is repeated only after a
 * 429, see `submit`), the request's abort signal (our time limit, our client going away), and a
 * host's failure turned into our error shape: 429 stays 429 with its Retry-After, everything else
 * becomes a 502 that carries the host's own message. Credentials are attached per hop, only on
 * the configured origin: redirects are followed here, because a client that followed them would
 * carry custom key headers (`apikey`, `Api-Key`) along to whatever origin a redirect names. A
 * redirect to another origin is checked as URL inputs are (redirect-guard.ts), and a POST's body
 * goes only to the configured origin.
 * Calls go through undici's `request`, not `fetch`: the same client without the WHATWG streams
 * and objects around it, which cost a generation more CPU than everything else it does.
 */
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request as undiciRequest, type Dispatcher, type FormData } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelayMs, shouldRetry, type RetryPolicy } from '../../../../core/retry-policy';
import { isOwnOrigin, type HostCredentials } from './host-credentials';
import { boundedHostText } from './host-text';
import { NotJsonError } from './image-json';
import { jsonBody, type JsonBody } from './json-body';
import { ProviderAnswer } from './provider-answer';
import { CHECKED_REDIRECTS, checkedRedirect, pinnedDispatcher, type RedirectReach } from './redirect-guard';
import type { HostResolver } from '../../net/safe-fetch';
import { withTraceContext } from '../../telemetry/spans';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

export interface ProviderRequest {
	/** Provider name, for messages. */
	provider: string;
	method: 'GET' | 'POST';
	url: string;
	/** Headers without secrets (`Model`, `Prefer`, …). */
	headers?: Record<string, string>;
	/** Sent only while the URL is on their origin. */
	credentials?: HostCredentials;
	json?: unknown;
	form?: FormData;
	signal: AbortSignal;
	retry?: HostRetryPolicy;
	/**
	 * When the generation's time limit ends (Date.now() milliseconds): a host's 429 is retried only
	 * if its wait ends before it. Without one, only the policy's count of retries bounds them.
	 */
	deadline?: number;
	/** Our error code for a host's refusal with this status, where the host gives it a meaning (Ideogram's 422: a safety rejection). */
	codesByStatus?: Readonly<Record<number, string>>;
	/** Our error code for a refusal whose meaning is in the host's body, not its status (OpenAI's 400 `moderation_blocked`); before codesByStatus. A code for a 429 makes it final: not retried, a 502 with that code. */
	codeOfRefusal?(status: number, text: string): string | undefined;
	/** How this host words a refusal, where the usual shapes miss its point (ComfyUI names the failing node apart from its message). */
	refusalMessage?: (text: string) => string | undefined;
	/**
	 * This call creates the host's job (billable work). It is never sent twice for one job: repeated
	 * only after a 429 (as Replicate's own clients do), never after a 5xx or a time-out, because a
	 * proxy's 502 or a lost answer may come after the host made the job. Its failures that prove
	 * the host made nothing (a 429, a refused connection) become a NothingMadeError, which a
	 * fallback chain may pass on to the next host; the same failure on a later call (a status poll,
	 * a download) proves nothing, because the job may already be running and billed.
	 */
	submit?: boolean;
	/**
	 * This call prepares a job and makes nothing billable (an input upload): retried like a poll,
	 * and any refusal of it (429, 5xx, 401, 403, a refused connection) proves no job was made.
	 */
	prepares?: boolean;
}

/**
 * A provider failure that proves no image was made and nothing was charged: the connection to
 * create the job was refused or its host name did not resolve, the host answered the create with
 * 429 (after the retries), or it refused a call that only prepares the job (`prepares`). A 5xx to
 * the create proves nothing (a proxy's 502 may come after the job exists), nor does a time-out.
 * Only this lets a fallback chain try the next host without risking a double charge. Answered
 * exactly like the ImageGenError it stands for.
 */
export class NothingMadeError extends ImageGenError {
	constructor(
		readonly provider: string,
		error: ImageGenError,
	) {
		super(error.status, error.message, { param: error.param, code: error.code, retryAfterSeconds: error.retryAfterSeconds, cause: error.cause });
	}
}

/** Connection failures before any byte of the request reached the host. */
const NOT_CONNECTED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH']);

/** Whether this refusal proves the host made no job: a create rate limited, or a preparation refused (rate limited, failing, or our key refused). */
function provesNothingMade(request: ProviderRequest, status: number): boolean {
	if (request.prepares) return status === 429 || status >= 500 || status === 401 || status === 403;
	return request.submit === true && status === 429;
}

export interface HostRetryPolicy extends RetryPolicy {
	/** The shortest wait after a host's 429 that says no Retry-After (RATE_LIMIT_FLOOR_MS when absent). */
	rateLimitFloorMs?: number;
	/** Where a redirect to another origin may lead (the address check unless lifted); checked when absent. */
	redirects?: RedirectReach;
}

/**
 * A host that rate-limits without Retry-After is asked again no sooner than this: its limits are
 * counted per minute or so, and the exponential backoff (0.5–1 s first) would spend the retries
 * inside the same window.
 */
const RATE_LIMIT_FLOOR_MS = 10_000;

/**
 * How soon providers ask a host again: the hosts' own pace, unless the caller building the
 * providers in process sets it (a suite against loopback stand-ins has no reason to wait a second).
 */
export interface ProviderTiming {
	/** The first pause of the retry backoff; the nodes' policy's otherwise. */
	retryBaseDelayMs?: number;
	/** The pause between two status polls of a host's job (Replicate, Pruna, ComfyUI); 1 s otherwise. */
	pollIntervalMs?: number;
	/**
	 * Not a pace, but handed to every provider the same way: --allow-private-urls, which lets a
	 * host's redirect to another origin reach private addresses. Off (checked) when absent.
	 */
	allowPrivateRedirects?: boolean;
	/** How a redirect's host name is resolved for that check (a test's stand-in DNS); the system's otherwise. */
	resolveRedirectHost?: HostResolver;
}

export function providerRetryPolicy(timing: ProviderTiming): HostRetryPolicy {
	return {
		...DEFAULT_RETRY_POLICY,
		baseDelayMs: timing.retryBaseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
		redirects: { allowPrivate: timing.allowPrivateRedirects ?? false, ...(timing.resolveRedirectHost ? { resolve: timing.resolveRedirectHost } : {}) },
	};
}

export const pollIntervalMs = (timing: ProviderTiming): number => timing.pollIntervalMs ?? 1000;

export async function providerFetch(request: ProviderRequest): Promise<ProviderAnswer> {
	const policy: HostRetryPolicy = request.retry ?? DEFAULT_RETRY_POLICY;
	for (let attempt = 1; ; attempt++) {
		const response = await send(request);
		if (response.ok) return response;
		if (response.status === 429) {
			const text = await response.errorText().catch(() => '');
			const wait = rateLimitWaitMs(response.header('retry-after'), text, policy.rateLimitFloorMs);
			const inTime = request.deadline === undefined || Date.now() + wait < request.deadline;
			// A 429 the host's own code calls final (OpenAI's `insufficient_quota`) is no rate limit: waiting never helps.
			const final = request.codeOfRefusal?.(429, text) !== undefined;
			if (!final && inTime && shouldRetry(429, attempt, policy)) {
				await sleep(wait, undefined, { signal: request.signal });
				continue;
			}
			throw refused(request, 429, providerError(request, 429, text, wait));
		}
		if (!request.submit && shouldRetry(response.status, attempt, policy)) {
			const wait = retryDelayMs(attempt, parseRetryAfter(response.header('retry-after')), policy);
			await response.discard();
			await sleep(wait, undefined, { signal: request.signal });
			continue;
		}
		const text = await response.errorText().catch(() => '');
		throw refused(request, response.status, providerError(request, response.status, text));
	}
}

/** A refusal that proves nothing was made may go to the next host of a chain. */
function refused(request: ProviderRequest, status: number, error: ImageGenError): ImageGenError {
	return provesNothingMade(request, status) ? new NothingMadeError(request.provider, error) : error;
}

/**
 * How long a host's 429 asks us to wait: its Retry-After when it sends one, else what its answer
 * says in words ("resets in ~30s"), and never less than the floor.
 */
export function rateLimitWaitMs(retryAfter: unknown, text: string, floorMs: number = RATE_LIMIT_FLOOR_MS): number {
	return parseRetryAfter(retryAfter) ?? Math.max(floorMs, hintedWaitMs(text) ?? 0);
}

/** "resets in ~30s", "try again in 45 seconds", "retry after 2 minutes": the wait a host's words give, in ms. */
export function hintedWaitMs(text: string): number | undefined {
	const match = /\b(?:in|after)\s+(?:about\s+|~\s*)?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b/i.exec(text);
	if (!match) return undefined;
	const unit = match[2]!.toLowerCase();
	const unitMs = unit === 'ms' || unit.startsWith('milli') ? 1 : unit.startsWith('m') ? 60_000 : 1_000;
	return Math.round(Number(match[1]) * unitMs);
}

export async function providerJson<T>(request: ProviderRequest): Promise<T> {
	return (await parsed(request, (answer) => answer.json())) as T;
}

/**
 * A JSON answer that carries base64 images: read as it arrives, each long string decoded to a
 * Buffer in its place (image-json.ts; `base64Bytes` reads a field either way), never held as text.
 */
export async function providerImageJson<T>(request: ProviderRequest): Promise<T> {
	return (await parsed(request, (answer) => answer.imageJson())) as T;
}

async function parsed(request: ProviderRequest, parse: (answer: ProviderAnswer) => Promise<unknown>): Promise<unknown> {
	const answer = await providerFetch(request);
	try {
		return await parse(answer);
	} catch (error) {
		if (!(error instanceof NotJsonError)) throw error;
		const page = error.htmlPage ? ' but an HTML page (is its base URL the address of its API?)' : '';
		throw new ImageGenError(502, `The ${request.provider} provider answered something that is not JSON${page}`, { code: 'upstream_invalid_output' });
	}
}

export async function providerBytes(request: ProviderRequest): Promise<Buffer> {
	return (await providerFetch(request)).bytes();
}

/**
 * A download as a stream (a video): the same credentials, redirects and retries as providerBytes,
 * its body handed over as it arrives instead of gathered; the caller's reader bounds it.
 */
export async function providerStream(request: ProviderRequest): Promise<Readable> {
	return (await providerFetch(request)).stream();
}

/**
 * A POST sent once, best effort and short (a cancel, an interrupt): its answer is discarded and
 * its failure ignored, because its caller is already failing for its own reason.
 */
export async function postOnce(request: Omit<ProviderRequest, 'method' | 'retry' | 'signal'>, signal: AbortSignal = AbortSignal.timeout(5_000)): Promise<void> {
	await providerFetch({ ...request, method: 'POST', signal, retry: { ...DEFAULT_RETRY_POLICY, maxRetries: 0 } })
		.then((answer) => answer.discard())
		.catch(() => undefined);
}

type RequestBody = string | JsonBody | FormData | undefined;

async function send(request: ProviderRequest): Promise<ProviderAnswer> {
	// The host call's trace context (generation/traced-provider.ts): a host that traces continues it.
	const headers: Record<string, string> = withTraceContext({ accept: 'application/json', ...request.headers });
	let body: RequestBody;
	if (request.json !== undefined) {
		headers['content-type'] = 'application/json';
		body = jsonBody(request.json);
		if (typeof body === 'object') headers['content-length'] = String(body.length);
	} else if (request.form) {
		body = request.form;
	}
	let { url, method } = request;
	// The URL the caller gave is the configured host's (or one checked to be on its origin, ownUrl).
	const trusted = new URL(url).origin;
	for (let hop = 0; ; hop++) {
		const credentials = request.credentials && isOwnOrigin(url, request.credentials) ? request.credentials.headers : {};
		const pinned = new URL(url).origin === trusted ? undefined : await checkedRedirect(request.provider, new URL(url), request.retry?.redirects ?? CHECKED_REDIRECTS);
		const response = await sendOnce(request, url, method, { ...headers, ...credentials }, body, pinned && pinnedDispatcher(pinned));
		const location = response.header('location');
		if (!REDIRECT_STATUSES.has(response.status) || !location) return response;
		await response.discard();
		if (hop === MAX_REDIRECTS) {
			throw new ImageGenError(502, `The ${request.provider} provider redirected more than ${MAX_REDIRECTS} times`, { code: 'upstream_failed' });
		}
		const next = new URL(location, url);
		if (method === 'POST' && (response.status === 307 || response.status === 308) && next.origin !== trusted) {
			// 307 and 308 repeat the POST, body and all: a prompt and input images go to the configured host only.
			throw new ImageGenError(502, `The ${request.provider} provider redirected a POST with ${response.status} to ${next.host}; its body is sent only to ${new URL(trusted).host}`, {
				code: 'upstream_invalid_output',
			});
		}
		url = next.toString();
		// As fetch does: 303, and 301/302 after a POST, continue as a GET without a body.
		if (response.status === 303 || (method === 'POST' && response.status !== 307 && response.status !== 308)) {
			method = 'GET';
			body = undefined;
			delete headers['content-type'];
			delete headers['content-length'];
		}
	}
}

/** @param pinned a dispatcher connecting only to a redirect's checked address, closed once this call is done */
async function sendOnce(request: ProviderRequest, url: string, method: 'GET' | 'POST', headers: Record<string, string>, body: RequestBody, pinned?: Dispatcher): Promise<ProviderAnswer> {
	try {
		// A FormData body (undici's own class) is encoded by undici, with its boundary in content-type;
		// a JSON body with images is written from its start on every hop and every retry.
		const sent = body !== undefined && typeof body === 'object' && 'chunks' in body ? Readable.from(body.chunks()) : body;
		const answer = await undiciRequest(url, { method, headers, body: sent, signal: request.signal, ...(pinned ? { dispatcher: pinned } : {}) });
		return new ProviderAnswer(request.provider, answer);
	} catch (error) {
		if (request.signal.aborted) throw error;
		// The socket's own text names addresses, ports and host names of our network: the client gets
		// the kind of failure, the log (through `cause`) the details.
		const unreachable = new ImageGenError(502, `The ${request.provider} provider could not be reached: ${connectionFailure(error)}`, {
			code: 'upstream_unreachable',
			cause: error,
		});
		throw (request.submit || request.prepares) && neverConnected(error) ? new NothingMadeError(request.provider, unreachable) : unreachable;
	} finally {
		// Takes no new calls; the answer's body is still read to its end before the connection goes.
		void pinned?.close().catch(() => undefined);
	}
}

const CONNECTION_FAILURES: Record<string, string> = {
	ECONNREFUSED: 'connection refused',
	ENOTFOUND: 'its host name did not resolve',
	EAI_AGAIN: 'its host name did not resolve',
	ENETUNREACH: 'network unreachable',
	EHOSTUNREACH: 'host unreachable',
	ECONNRESET: 'connection reset',
	ETIMEDOUT: 'connection timed out',
	UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
	UND_ERR_SOCKET: 'connection lost',
};

/** What kind of connection failure this was, in words that carry no address. */
function connectionFailure(error: unknown): string {
	const code = socketErrorCodes(error)[0];
	if (code === undefined) return 'network error';
	if (code in CONNECTION_FAILURES) return CONNECTION_FAILURES[code]!;
	return /CERT|TLS|SSL/.test(code) ? 'its TLS certificate was not accepted' : 'network error';
}

function neverConnected(error: unknown): boolean {
	const codes = socketErrorCodes(error);
	return codes.length > 0 && codes.every((code) => NOT_CONNECTED_CODES.has(code));
}

/**
 * The socket error's code: on the error itself, or on its cause, or on each of the errors of an
 * AggregateError when every address of the host failed.
 */
function socketErrorCodes(error: unknown): string[] {
	const failure = error as { code?: unknown; errors?: unknown; cause?: unknown } | undefined;
	if (!failure) return [];
	if (Array.isArray(failure.errors) && failure.errors.length > 0) {
		const codes = (failure.errors as Array<{ code?: unknown }>).map((each) => each.code);
		return codes.every((code): code is string => typeof code === 'string') ? codes : [];
	}
	if (typeof failure.code === 'string') return [failure.code];
	return failure.cause === undefined ? [] : socketErrorCodes(failure.cause);
}

function providerError(request: ProviderRequest, status: number, text: string, waitMs = 1_000): ImageGenError {
	const { provider } = request;
	const message = boundedHostText(request.refusalMessage?.(text) ?? hostMessage(text) ?? STATUS_CODES[status] ?? 'no message');
	const refusalCode = request.codeOfRefusal?.(status, text);
	if (status === 429 && refusalCode === undefined) {
		return new ImageGenError(429, `The ${provider} provider is rate limiting us: ${message}`, {
			code: 'upstream_rate_limited',
			retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
		});
	}
	const code = refusalCode ?? request.codesByStatus?.[status] ?? (status === 401 || status === 403 ? 'upstream_auth_failed' : status < 500 ? 'upstream_rejected' : 'upstream_failed');
	return new ImageGenError(502, `The ${provider} provider answered HTTP ${status}: ${message}`, { code });
}

/** The human part of a host's error body, whichever of the usual shapes it uses; bounded (host-text.ts). */
export function hostMessage(text: string): string | undefined {
	const message = wholeHostMessage(text);
	return message === undefined ? undefined : boundedHostText(message);
}

function wholeHostMessage(text: string): string | undefined {
	let body: unknown;
	try {
		body = JSON.parse(text);
	} catch {
		return cutJsonMessage(text) ?? (text.trim() || undefined);
	}
	const pick = (value: unknown): string | undefined => {
		if (typeof value === 'string' && value.trim()) return value.trim();
		if (Array.isArray(value)) return pick(value[0]);
		if (value && typeof value === 'object') {
			const object = value as Record<string, unknown>;
			// Stable Diffusion WebUI's 500: `{ error: "OutOfMemoryError", detail: "", body: "", errors: "CUDA out of memory…" }`.
			if (typeof object.error === 'string' && typeof object.errors === 'string' && object.errors.trim()) return `${object.error}: ${object.errors.trim()}`;
			return pick(object.message) ?? pick(object.detail) ?? pick(object.error) ?? pick(object.title) ?? pick(object.msg);
		}
		return undefined;
	};
	return pick(body);
}

/**
 * The message of a JSON error cut off at the read bound (`{"error":{"message":"…`): the first of
 * the usual message fields, as far as it goes, rather than the JSON's opening punctuation.
 */
function cutJsonMessage(text: string): string | undefined {
	if (!/^\s*[[{]/.test(text)) return undefined;
	const match = /"(?:message|detail|error|title|msg)"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(text);
	if (!match?.[1]) return undefined;
	try {
		return JSON.parse(`"${match[1].replace(/\\(u[0-9a-fA-F]{0,3})?$/, '')}"`) as string;
	} catch {
		return match[1];
	}
}
