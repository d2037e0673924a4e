/**
 * One attempt at a delivery: the address guard applied again (DNS may have changed since the
 * request), then a POST of the stored body pinned to the checked address, answered by its status
 * alone. Redirects are not followed (a 3xx is a failure like any non-2xx, as the Standard
 * Webhooks spec advises), and the answer's body is read and thrown away.
 */
import http from 'node:http';
import https from 'node:https';
import { ImageGenError } from '../../../core/errors';
import { checkTarget, pinnedLookup, type HostResolver } from '../net/safe-fetch';
import type { SignedHeaders } from './signing';

interface SendPolicy {
	allowPrivate: boolean;
	/** The whole attempt, DNS and connection included. */
	timeoutMs: number;
	resolve?: HostResolver;
	/** Ends the attempt early when the service stops. */
	signal: AbortSignal;
}

type SendOutcome = { received: true } | { received: false; error: string };

export async function sendDelivery(target: string, body: string, headers: SignedHeaders, policy: SendPolicy): Promise<SendOutcome> {
	const timeout = AbortSignal.timeout(policy.timeoutMs);
	const signal = AbortSignal.any([timeout, policy.signal]);
	try {
		const url = new URL(target);
		const [address] = await checkTarget(url, 'webhook_url', { allowPrivate: policy.allowPrivate, timeoutMs: policy.timeoutMs, resolve: policy.resolve });
		const status = await post(url, body, headers, pinnedLookup(address!), signal);
		return status >= 200 && status <= 299 ? { received: true } : { received: false, error: `the receiver answered HTTP ${status}` };
	} catch (error) {
		if (timeout.aborted) return { received: false, error: `no answer within ${policy.timeoutMs / 1000} s` };
		if (error instanceof ImageGenError) return { received: false, error: error.message };
		const code = (error as NodeJS.ErrnoException).code;
		return { received: false, error: `could not reach the receiver${code ? ` (${code})` : `: ${(error as Error).message}`}` };
	}
}

function post(url: URL, body: string, headers: SignedHeaders, lookup: ReturnType<typeof pinnedLookup>, signal: AbortSignal): Promise<number> {
	const client = url.protocol === 'https:' ? https : http;
	return new Promise((resolve, reject) => {
		const outgoing = client.request(url, {
			method: 'POST',
			lookup,
			signal,
			agent: false,
			headers: {
				...headers,
				'content-type': 'application/json',
				'content-length': String(Buffer.byteLength(body)),
				'user-agent': 'imagegen-server',
			},
		});
		outgoing.once('response', (response) => {
			// The status is the answer; whatever body follows is drained, and a break in it is no matter.
			response.on('error', () => undefined);
			response.resume();
			resolve(response.statusCode ?? 0);
		});
		outgoing.once('error', reject);
		outgoing.end(body);
	});
}
