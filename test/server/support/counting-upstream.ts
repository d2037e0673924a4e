/**
 * A model host speaking this service's own API (the `upstream` provider's contract) that counts
 * the generations it is asked for: how the idempotency tests see whether a request reached a
 * provider. Answers after `delayMs`; `failNext(n)` makes the next n calls a 400 (not retried).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export const UPSTREAM_KEY = 'upstream-key-0123456789';

export interface CountingUpstream {
	/** Base URL for UPSTREAM_BASE_URL (with /v1). */
	baseUrl: string;
	calls: number;
	delayMs: number;
	/** Images in each answer (1 unless a test makes the host hand out more than it was asked for). */
	imagesPerAnswer: number;
	failNext(count: number): void;
	/** `--providers` and env that make a CLI process generate p-image through this host. */
	serverOptions(): { args: string[]; env: Record<string, string> };
	close(): Promise<void>;
}

/** `picture`: the PNG every call answers with, instead of a small one of its own colour. */
export async function startCountingUpstream(delayMs = 0, options: { picture?: Buffer } = {}): Promise<CountingUpstream> {
	let failures = 0;
	let seedColour = 0;
	const server: Server = createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			if (request.method !== 'POST' || request.url !== '/v1/images/generations' || request.headers.authorization !== `Bearer ${UPSTREAM_KEY}`) {
				response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here","type":"invalid_request_error","param":null,"code":"not_found"}}');
				return;
			}
			upstream.calls++;
			if (failures > 0) {
				failures--;
				response
					.writeHead(400, { 'content-type': 'application/json' })
					.end('{"error":{"message":"refused for this test","type":"invalid_request_error","param":"prompt","code":"refused"}}');
				return;
			}
			// A different picture per call: a replay that generated again would show.
			const colour = (seedColour += 37) % 256;
			setTimeout(() => {
				const picture = options.picture ? Promise.resolve(options.picture) : sharp({ create: { width: 32, height: 32, channels: 3, background: { r: colour, g: 80, b: 160 } } }).png().toBuffer();
				void picture.then((png) => {
						const data = Array.from({ length: upstream.imagesPerAnswer }, () => ({ b64_json: png.toString('base64'), seed: 1 }));
						const answer = { created: 0, model: 'p-image', output_format: 'png', data, usage: { images: data.length, cost_usd: 0.0035 * data.length } };
						response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
					});
			}, upstream.delayMs);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
	const upstream: CountingUpstream = {
		baseUrl,
		calls: 0,
		delayMs,
		imagesPerAnswer: 1,
		failNext(count) {
			failures = count;
		},
		serverOptions: () => ({
			args: ['--providers', 'p-image=upstream'],
			env: { UPSTREAM_BASE_URL: baseUrl, UPSTREAM_API_KEY: UPSTREAM_KEY },
		}),
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
	return upstream;
}
