/**
 * A webhook receiver on loopback that records every delivery and answers what the test says, and
 * a verification of Standard Webhooks signatures written from the spec alone (not the service's
 * code): HMAC-SHA256 keyed with the base64 after `whsec_`, over `id.timestamp.body`, compared with
 * each `v1,` entry of the header, and a timestamp within five minutes.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
	/** The path and query string it was POSTed to. */
	path: string;
	headers: IncomingHttpHeaders;
	body: string;
}

export interface Receiver {
	url: string;
	received: Received[];
	/** The most requests it held open at one time. */
	mostAtOnce(): number;
	/** What the next deliveries are answered with (a status, or `hang`: never answered). */
	answer(next: number | 'hang'): void;
	close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
	const received: Received[] = [];
	let status: number | 'hang' = 200;
	let open = 0;
	let most = 0;
	const server: Server = createServer((request, response) => {
		open += 1;
		most = Math.max(most, open);
		response.on('close', () => (open -= 1));
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
			if (status === 'hang') return;
			response.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}${path}`,
		received,
		mostAtOnce: () => most,
		answer: (next) => {
			status = next;
		},
		close: () =>
			new Promise((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** Standard Webhooks verification as a receiver would write it; throws what is wrong. */
export function verifyStandardWebhook(secret: string, headers: IncomingHttpHeaders, body: string, nowSeconds: number): void {
	const id = headers['webhook-id'];
	const timestamp = headers['webhook-timestamp'];
	const signatures = headers['webhook-signature'];
	if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') throw new Error('a webhook header is missing');
	if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 300) throw new Error(`timestamp ${timestamp} is not within 5 minutes of ${nowSeconds}`);
	if (!secret.startsWith('whsec_')) throw new Error('the secret is not whsec_');
	const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
	const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
	const matches = signatures.split(' ').some((entry) => {
		const [version, signature] = entry.split(',');
		if (version !== 'v1' || !signature) return false;
		const given = Buffer.from(signature, 'base64');
		return given.length === expected.length && timingSafeEqual(given, expected);
	});
	if (!matches) throw new Error('no signature matches');
}
