/**
 * POST /mcp: the Model Context Protocol over Streamable HTTP, stateless. Registered in a scope
 * guarded like /v1 (plugins/api-guard.ts): the same API keys, rate limits and (through the shared
 * generation runner) the same models and budgets; every call counts. Each request gets its own
 * MCP server and transport, answered as plain JSON (no SSE stream), so any replica can take any
 * call. GET and DELETE (server-sent events, sessions) are not offered: 405.
 *
 * JSON-RPC batches (an array body) are refused whole, before any call runs: MCP 2025-06-18, the
 * revision the SDK speaks, dropped batching, and a batch would be one HTTP request carrying many
 * tool calls past the per-request rate limit. Refusing keeps "n requests a minute" meaning at most
 * n generations, with no second way of counting.
 *
 * The MCP SDK is loaded by the first MCP request, not at start: its modules take V8 heap that a
 * service no agent calls would carry for ever.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import { keyPolicyOf } from '../keys/authenticate';
import { sendApiError } from '../http/error-handler';
import { callTool, toolsFor, type ToolCaller } from '../mcp/tools';
import { clientGoneSignal } from '../http/client-gone';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, type BodyExamples } from '../schema-docs/route-schemas';

const MCP_PATH = '/mcp';

const SERVER_INFO = { name: 'imagegen', title: 'ImageGen', version: '1.0.0' };
const INSTRUCTIONS =
	'Generate images (generate_image) and host images or videos at public URLs (upload_file); every answer carries URLs, never image bytes. Files expire; get_file tells when, delete_file removes one early. get_generation and cancel_generation follow a generation by its id. list_models gives each model\'s fields, limits and price.';

/** JSON-RPC's Invalid Request (its code, as the SDK's ErrorCode.InvalidRequest), with no id: a batch has no single id to answer. */
const BATCH_REFUSED = {
	jsonrpc: '2.0',
	id: null,
	error: { code: -32600, message: 'JSON-RPC batches are not accepted (MCP 2025-06-18 has none): send one message per request' },
} as const;

const JSON_RPC_ANSWER = { type: 'object', description: 'The JSON-RPC answer' };

/** The body documents only: the MCP SDK reads the JSON-RPC message itself. */
const postSchema = {
	tags: ['Agents'],
	operationId: 'mcp',
	summary: 'Model Context Protocol, Streamable HTTP, stateless: tools generate_image, get_generation, cancel_generation, upload_file, get_file, delete_file, list_models',
	...API_KEY_AUTH,
	body: { type: 'object', description: 'One JSON-RPC 2.0 message (a batch is refused)' },
	bodyExamples: {
		'tools/list': { summary: 'The tools this key may use, with their input schemas', value: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
		'tools/call': { summary: 'Call list_models', value: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_models', arguments: {} } } },
	} satisfies BodyExamples,
	response: {
		200: JSON_RPC_ANSWER,
		202: { description: 'A notification was accepted', type: 'null' },
		400: { ...JSON_RPC_ANSWER, description: 'A JSON-RPC batch (an array): refused whole, before any call runs, with JSON-RPC error -32600' },
		...errorResponses(...AUTH_ERRORS, [406, 'Accept must list application/json and text/event-stream']),
	},
};
const notOfferedSchema = (operationId: string, summary: string) => ({
	tags: ['Agents'],
	operationId,
	summary,
	...API_KEY_AUTH,
	response: errorResponses(...AUTH_ERRORS, [405, 'Send every message with POST']),
});

export default async function mcpRoutes(scope: FastifyInstance): Promise<void> {
	const { maxJsonBytes, maxUploadBytes } = scope.config;

	scope.post(MCP_PATH, { schema: postSchema }, async (request, reply) => {
		if (Array.isArray(request.body)) return reply.code(400).send(BATCH_REFUSED);
		const apiKey = keyPolicyOf(request);
		const caller: ToolCaller = { apiKeyId: request.apiKeyId, apiKey, clientGone: clientGoneSignal(reply) };
		const tools = toolsFor(scope, apiKey);
		const { Server, StreamableHTTPServerTransport, CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } = await loadSdk();
		const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
		server.setRequestHandler(ListToolsRequestSchema, () => ({
			tools: tools.map(({ name, title, description, inputSchema, annotations }) => ({ name, title, description, inputSchema, annotations })),
		}));
		server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
			const tool = tools.find((candidate) => candidate.name === params.name);
			if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${params.name}': use ${tools.map(({ name }) => name).join(', ')}`);
			return callTool(tool, params.arguments ?? {}, caller, { maxJsonBytes, maxUploadBytes }, request.log);
		});
		const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
		reply.raw.once('close', () => {
			void transport.close();
			void server.close();
		});
		reply.hijack();
		await server.connect(transport);
		await transport.handleRequest(request.raw, reply.raw, request.body);
	});

	const notOffered = async (_request: unknown, reply: FastifyReply) => {
		reply.header('allow', 'POST');
		return sendApiError(reply, new ImageGenError(405, 'This MCP endpoint is stateless: send every message with POST', { code: 'method_not_allowed' }));
	};
	scope.get(MCP_PATH, { schema: notOfferedSchema('mcpStream', 'Not offered (stateless)') }, notOffered);
	scope.delete(MCP_PATH, { schema: notOfferedSchema('mcpSession', 'Not offered (no sessions)') }, notOffered);
}

let sdk: Promise<typeof import('@modelcontextprotocol/sdk/server/index.js') & typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js') & typeof import('@modelcontextprotocol/sdk/types.js')> | undefined;

function loadSdk(): NonNullable<typeof sdk> {
	sdk ??= Promise.all([
		import('@modelcontextprotocol/sdk/server/index.js'),
		import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
		import('@modelcontextprotocol/sdk/types.js'),
	]).then(([server, transport, types]) => ({ ...server, ...transport, ...types }));
	return sdk;
}
