/** A tiny HTTP server on 127.0.0.1 that serves whatever bytes a test puts at a path. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MediaHost {
	origin: string;
	put(path: string, bytes: Buffer, headers?: Record<string, string>): string;
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
