/**
 * The nodes with a managed key, run by n8n-core's engine against the real server: a spent budget
 * (402) is final and says what was spent of which budget and when it resets; a model the key may
 * not use (403) names the Model parameter; the credential test explains an admin key entered as
 * the API key.
 */
import { Workflow, type INode, type INodeTypes } from 'n8n-workflow';

import { ImageGenApi } from '../../credentials/ImageGenApi.credentials';
import type { ServiceUnderTest } from '../helpers/server';
import { startInProcessServer } from '../server/support/app';
import { createManagedKey } from '../server/support/http';
import { IMAGE_GEN, runWorkflow, type WorkflowNode } from './support/engine';
import { startRecordingProxy, type RecordingProxy } from './support/recording-proxy';

const ADMIN_KEY = 'node-admin-key-0123456789';

let server: ServiceUnderTest;
let proxy: RecordingProxy;

beforeAll(async () => {
	server = await startInProcessServer({ args: ['--admin-key', ADMIN_KEY] });
	proxy = await startRecordingProxy(server.origin);
});
afterAll(async () => {
	await proxy?.close();
	await server?.stop({ removeData: true });
});
beforeEach(() => proxy.reset());

const createKey = async (fields: Record<string, unknown>) => (await createManagedKey(server, ADMIN_KEY, { name: 'node test', ...fields })).key;

const generate = (parameters: Record<string, unknown>): WorkflowNode => ({ name: 'ImageGen', type: IMAGE_GEN, parameters });
const generations = () => proxy.requests.filter((request) => request.path === '/v1/images/generations');

test('a spent budget fails the node at once, saying what was spent of which budget and when it resets', async () => {
	const apiKey = await createKey({ budget_usd: 0.0035, budget_period: 'day' });
	const credentials = { apiKey, baseUrl: proxy.baseUrl };
	const first = await runWorkflow({ credentials, nodes: [generate({ model: 'p-image', prompt: 'one', responseFormat: 'b64_json' })] });
	expect(first.error()).toBeUndefined();
	proxy.reset();

	const second = await runWorkflow({ credentials, nodes: [generate({ model: 'p-image', prompt: 'two', responseFormat: 'b64_json' })] });
	const error = second.error('ImageGen');
	expect(error?.httpCode).toBe('402');
	expect(error?.message).toContain('$0.0035');
	expect(error?.message).toContain('daily');
	expect(error?.message).toMatch(/resets at \d{4}-\d{2}-\d{2}T00:00:00\.000Z/);
	expect(error?.description).toMatch(/budget/i);
	expect(error?.description).toMatch(/not retried/i);
	// Final: one request, no retry.
	expect(generations()).toHaveLength(1);
});

test('a model the key may not use names the Model parameter', async () => {
	const apiKey = await createKey({ models: ['p-image'] });
	const result = await runWorkflow({
		credentials: { apiKey, baseUrl: proxy.baseUrl },
		nodes: [generate({ model: 'textimage-v2', prompt: 'a poster', responseFormat: 'b64_json' })],
	});
	const error = result.error('ImageGen');
	expect(error?.httpCode).toBe('403');
	expect(error?.message).toContain("may not use the model 'textimage-v2'");
	expect(error?.description).toContain("parameter 'model'");
	expect(generations()).toHaveLength(1);
});

describe('the credential test', () => {
	const node: INode = { id: 'n', name: 'Credential', type: IMAGE_GEN, typeVersion: 1, position: [0, 0], parameters: {} };
	const nodeTypes = { getByName: () => undefined, getByNameAndVersion: () => undefined, getKnownTypes: () => ({}) } as unknown as INodeTypes;
	const workflow = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });

	/** The request with its expressions resolved by n8n, then n8n's rule: a failing status with a rule of its own shows that rule's message. */
	async function testCredential(apiKey: string): Promise<{ status: number; message?: string }> {
		const credential = new ImageGenApi();
		const $credentials = { apiKey, baseUrl: server.baseUrl };
		const resolve = (value: string) => workflow.expression.getSimpleParameterValue(node, value, 'internal', { $credentials } as never) as string;
		const { baseURL, url } = credential.test.request;
		const authorization = resolve(credential.authenticate.properties.headers!.Authorization as string);
		const response = await fetch(`${resolve(baseURL!)}${url}`, { headers: { authorization } });
		const rule = credential.test.rules?.find((each) => each.type === 'responseCode' && each.properties.value === response.status);
		return { status: response.status, message: rule?.properties.message };
	}

	test('explains that an admin key was entered instead of an API key', async () => {
		const outcome = await testCredential(ADMIN_KEY);
		expect(outcome.status).toBe(403);
		expect(outcome.message).toMatch(/admin key/i);
		expect(outcome.message).toMatch(/API key/);
	});

	test('a managed key passes', async () => {
		expect(await testCredential(await createKey({}))).toEqual({ status: 200, message: undefined });
	});
});
