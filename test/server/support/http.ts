/** Small client helpers for the server suites: every call is real HTTP over loopback. */
import type { ServiceUnderTest } from '../../helpers/server';

/** What a call needs of a service, started as a process or in process. */
type Reachable = Pick<ServiceUnderTest, 'origin' | 'apiKey'>;

export interface ApiAnswer<T = any> {
	status: number;
	headers: Headers;
	body: T;
}

export async function call<T = any>(
	server: Reachable,
	path: string,
	init: RequestInit & { auth?: string | null } = {},
): Promise<ApiAnswer<T>> {
	const headers = new Headers(init.headers);
	const auth = init.auth === undefined ? `Bearer ${server.apiKey}` : init.auth;
	if (auth !== null) headers.set('authorization', auth);
	const response = await fetch(`${server.origin}${path}`, { ...init, headers });
	const text = await response.text();
	let body: unknown = text;
	if ((response.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
	return { status: response.status, headers: response.headers, body: body as T };
}

export function postJson<T = any>(server: Reachable, path: string, body: unknown, init: RequestInit & { auth?: string | null } = {}) {
	return call<T>(server, path, {
		...init,
		method: 'POST',
		headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
		body: typeof body === 'string' ? body : JSON.stringify(body),
	});
}

/** A managed key made through the admin API with `adminKey` (201 expected): its id and secret. */
export async function createManagedKey(server: Reachable, adminKey: string, fields: Record<string, unknown>): Promise<{ id: string; key: string }> {
	const created = await postJson(server, '/v1/admin/keys', fields, { auth: `Bearer ${adminKey}` });
	expect(created.status).toBe(201);
	return created.body;
}

/** One call with this secret as the bearer, and a JSON body when one is given. */
export function callAs<T = any>(server: Reachable, method: string, path: string, secret: string, body?: unknown) {
	const json = body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
	return call<T>(server, path, { method, auth: `Bearer ${secret}`, ...json });
}

export function uploadFile<T = any>(
	server: Reachable,
	bytes: Buffer,
	fields: Record<string, string> = {},
	options: { fileField?: string; fileName?: string; fieldsFirst?: boolean; mimeType?: string } = {},
) {
	const form = new FormData();
	const addFields = () => {
		for (const [name, value] of Object.entries(fields)) form.append(name, value);
	};
	if (options.fieldsFirst) addFields();
	form.append(options.fileField ?? 'file', new Blob([bytes], { type: options.mimeType ?? 'application/octet-stream' }), options.fileName ?? 'upload.bin');
	if (!options.fieldsFirst) addFields();
	return call<T>(server, '/v1/uploads', { method: 'POST', body: form });
}

/**
 * A GET read to its end. A body left unread holds its answer open on the server (the rest of a
 * large file waits in the socket), and the server's close then waits for it.
 */
export async function download(url: string | URL, init: RequestInit = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
	const response = await fetch(url, init);
	return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

export function expectApiError(answer: ApiAnswer, status: number, param: string | null, messagePattern?: RegExp): void {
	expect({ status: answer.status, param: answer.body?.error?.param }).toEqual({ status, param });
	expect(typeof answer.body.error.message).toBe('string');
	expect(answer.body.error.message.length).toBeGreaterThan(10);
	expect(typeof answer.body.error.type).toBe('string');
	expect(typeof answer.body.error.code).toBe('string');
	expect(JSON.stringify(answer.body)).not.toMatch(/\n\s+at /);
	if (messagePattern) expect(answer.body.error.message).toMatch(messagePattern);
}

/** Polls until `check` is true or the time is up; answers whether it became true. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, stepMs = 100): Promise<boolean> {
	// performance.now: a suite's fake clock (support/clock.ts) moves Date only when told to.
	const deadline = performance.now() + timeoutMs;
	while (performance.now() < deadline) {
		if (await check()) return true;
		await new Promise((resolve) => setTimeout(resolve, stepMs));
	}
	return check();
}
