/**
 * "Try it out" on /docs works as it comes: every operation that takes a body names at least one
 * example of it in the served OpenAPI document, which /docs puts in the request box in place of a
 * body made up from the schema (every optional field filled: a webhook URL the service refuses,
 * `size` beside `aspect_ratio`, …). Each example, sent as /docs sends it (its key, JSON), is taken:
 * a 2xx answer, never a 400.
 */
import { buildTestApp, type InProcessApp } from '../support/app';

const ADMIN_KEY = 'admin-secret-0123456789';

interface ExampleObject {
	summary?: string;
	value: unknown;
}
interface Operation {
	operationId: string;
	security?: Array<Record<string, unknown>>;
	requestBody?: { content: Record<string, { example?: unknown; examples?: Record<string, ExampleObject> }> };
}

let service: InProcessApp;
let document: { paths: Record<string, Record<string, Operation>> };
/** Videos the examples started: cancelled before the app closes, so no render outlives the suite. */
const videos: string[] = [];

beforeAll(async () => {
	service = await buildTestApp(['--admin-key', ADMIN_KEY]);
	document = (await (await service.request('/v1/openapi.json')).json()) as typeof document;
}, 60_000);
afterAll(async () => {
	for (const id of videos) await service.request(`/v1/videos/${id}/cancel`, { method: 'POST', headers: service.auth });
	await service?.close();
});

/** Every operation with a request body, and the examples of its JSON body. */
function operationsWithBody(): Array<{ method: string; path: string; operation: Operation; examples: Array<[string, unknown]> }> {
	return Object.entries(document.paths).flatMap(([path, item]) =>
		Object.entries(item)
			.filter(([, operation]) => operation.requestBody !== undefined)
			.map(([method, operation]) => {
				const json = operation.requestBody!.content['application/json'];
				const named = Object.entries(json?.examples ?? {}).map(([name, example]): [string, unknown] => [name, example.value]);
				const examples = json?.example === undefined ? named : [['example', json.example] as [string, unknown], ...named];
				return { method: method.toUpperCase(), path, operation, examples };
			}),
	);
}

/** A key made for the routes that act on one (`{id}`), as a reader of /docs would first make one. */
async function managedKeyId(): Promise<string> {
	const created = await service.request('/v1/admin/keys', {
		method: 'POST',
		headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
		body: JSON.stringify({ name: 'For the examples' }),
	});
	expect(created.status).toBe(201);
	return ((await created.json()) as { id: string }).id;
}

test('every operation that takes a body names an example of it', () => {
	const operations = operationsWithBody();
	expect(operations.map(({ operation }) => operation.operationId).sort()).toEqual(
		expect.arrayContaining(['createKey', 'createVideo', 'generateImage', 'mcp', 'rotateKey', 'updateKey', 'uploadFile']),
	);
	const without = operations.filter(({ examples }) => examples.length === 0).map(({ operation }) => operation.operationId);
	expect(without).toEqual([]);
});

test('the image generation examples cover every model, each on its own', () => {
	const generation = operationsWithBody().find(({ operation }) => operation.operationId === 'generateImage')!;
	const models = generation.examples.map(([, value]) => (value as { model: string }).model);
	expect(new Set(models)).toEqual(new Set(['p-image', 'p-image-edit', 'textimage-v2']));
});

test('each example, sent as /docs sends it, is taken (2xx)', async () => {
	const id = await managedKeyId();
	const refused: unknown[] = [];
	let sent = 0;
	for (const { method, path, operation, examples } of operationsWithBody()) {
		const key = operation.security && Object.keys(operation.security[0]!)[0] === 'adminKey' ? ADMIN_KEY : service.auth.authorization.slice('Bearer '.length);
		for (const [name, value] of examples) {
			const headers: Record<string, string> = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
			// The MCP transport answers only a client that takes both of its answer types (documented as its 406).
			if (path === '/mcp') headers.accept = 'application/json, text/event-stream';
			const answer = await service.request(path.replace('{id}', id), { method, headers, body: JSON.stringify(value) });
			sent += 1;
			const body = await answer.text();
			if (answer.status < 200 || answer.status > 299) refused.push({ operation: operation.operationId, example: name, status: answer.status, body });
			else if (operation.operationId === 'createVideo') videos.push((JSON.parse(body) as { id: string }).id);
		}
	}
	expect(refused).toEqual([]);
	expect(sent).toBeGreaterThanOrEqual(9);
}, 60_000);
