/**
 * The credential's test request ("Test" in the credential dialog), with its expressions resolved by
 * n8n's expression engine and sent to the real server: a good key passes, a bad one does not.
 */
import { Workflow, type INode, type INodeTypes } from 'n8n-workflow';

import { ImageGenApi } from '../../credentials/ImageGenApi.credentials';
import type { ServiceUnderTest } from '../helpers/server';
import { startInProcessServer } from '../server/support/app';

let server: ServiceUnderTest;

beforeAll(async () => {
	server = await startInProcessServer();
});

afterAll(async () => {
	await server?.stop({ removeData: true });
});

const node: INode = { id: 'n', name: 'Credential', type: 'n8n-nodes-imagegen.imageGen', typeVersion: 1, position: [0, 0], parameters: {} };
const nodeTypes = { getByName: () => undefined, getByNameAndVersion: () => undefined, getKnownTypes: () => ({}) } as unknown as INodeTypes;
const workflow = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });

async function testCredential(apiKey: string, baseUrl: string): Promise<number> {
	const credential = new ImageGenApi();
	const $credentials = { apiKey, baseUrl };
	const resolve = (value: string) => workflow.expression.getSimpleParameterValue(node, value, 'internal', { $credentials } as never) as string;
	const { baseURL, url } = credential.test.request;
	const authorization = resolve(credential.authenticate.properties.headers!.Authorization as string);
	const response = await fetch(`${resolve(baseURL!)}${url}`, { headers: { authorization } });
	return response.status;
}

test('a good key passes, also with a trailing slash on the base URL', async () => {
	expect(await testCredential(server.apiKey, server.baseUrl)).toBe(200);
	expect(await testCredential(server.apiKey, `${server.baseUrl}/`)).toBe(200);
});

test('a wrong key fails', async () => {
	expect(await testCredential('wrong-key-0123456789', server.baseUrl)).toBe(401);
});
