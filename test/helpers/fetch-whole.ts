/**
 * fetch, with the answer's body read to its end. A body left unread holds its answer open on the
 * server (the rest of a large file waits in the socket), and the server's close then waits for it
 * until the client's collector happens to free the response.
 */
export async function fetchWhole(input: string | URL, init?: RequestInit): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
	const response = await fetch(input, init);
	return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}
