/** A tiny HTTP server on 127.0.0.1 that serves whatever bytes a test puts at a path. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A path whose answer waits for the test: a generation that fetches it stays running until it is
 * released (the image sent) or refused (an error status), as long as the test needs, with no clock.
 */
export interface HeldMedia {
	url: string;
	/** Settles when the path is first asked for. */
	requested: Promise<void>;
	release(): void;
	refuse(status: number): void;
}

export interface MediaHost {
	origin: string;
	put(path: string, bytes: Buffer, headers?: Record<string, string>): string;
	hold(path: string, bytes: Buffer, headers?: Record<string, string>): HeldMedia;
	redirect(path: string, location: string): string;
	hits(): number;
	close(): Promise<void>;
}

export async function startMediaHost(): Promise<MediaHost> {
	const routes = new Map<string, (response: http.ServerResponse) => void>();
	let hits = 0;
	const server = http.createServer((request, response) => {
		hits++;
		const route = routes.get(request.url ?? '');
		if (route) route(response);
		else response.writeHead(404).end('not here');
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		origin,
		put(path, bytes, headers = {}) {
			routes.set(path, (response) => response.writeHead(200, { 'content-type': 'application/octet-stream', ...headers }).end(bytes));
			return `${origin}${path}`;
		},
		hold(path, bytes, headers = {}) {
			const waiting: http.ServerResponse[] = [];
			let answer: ((response: http.ServerResponse) => void) | undefined;
			let requested!: () => void;
			const held: HeldMedia = {
				url: `${origin}${path}`,
				requested: new Promise((resolve) => (requested = resolve)),
				release: () => settle((response) => response.writeHead(200, { 'content-type': 'application/octet-stream', ...headers }).end(bytes)),
				refuse: (status) => settle((response) => response.writeHead(status).end('refused')),
			};
			const settle = (respond: (response: http.ServerResponse) => void) => {
				answer ??= respond;
				for (const response of waiting.splice(0)) answer(response);
			};
			routes.set(path, (response) => {
				requested();
				if (answer) answer(response);
				else waiting.push(response);
			});
			return held;
		},
		redirect(path, location) {
			routes.set(path, (response) => response.writeHead(302, { location }).end());
			return `${origin}${path}`;
		},
		hits: () => hits,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
