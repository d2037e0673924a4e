/** A loopback port nothing listens on: connections to it are refused (no packet leaves the machine). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export async function closedPort(): Promise<number> {
	const server = http.createServer();
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	await new Promise((resolve) => server.close(resolve));
	return port;
}
