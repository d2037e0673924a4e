/**
 * The README's AI Agent example in a real n8n: an AI Agent whose OpenAI Chat Model talks to a
 * loopback stand-in of the chat-completions API. The stand-in asks for the ImageGen tool once,
 * then answers with the URL it finds in the tool's message. The image is generated exactly once
 * (the service's usage says so), the tool's answer is the compact JSON (no base64), and the URL
 * reaches both the model and the agent's answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { INSTALL_TIMEOUT_MS, openSession, outputOf, readExample, type Session } from './support/n8n';
import { download } from '../server/support/http';

const WORKFLOW_ID = 'imageGenExample4';
const OPENAI_CREDENTIAL = { id: 'openAiLocal0001', name: 'OpenAI' };

interface ChatMessage {
	role: string;
	content?: unknown;
	tool_call_id?: string;
}
interface ChatRequest {
	messages: ChatMessage[];
	tools?: Array<{ function: { name: string } }>;
}

let session: Session;
let standIn: Server;
const chatRequests: ChatRequest[] = [];
let agentOutput: Record<string, unknown>;

async function readJson(request: IncomingMessage): Promise<ChatRequest> {
	let text = '';
	for await (const chunk of request) text += chunk;
	return JSON.parse(text) as ChatRequest;
}

/** Chat completions: first a call of the offered tool, then, once the tool has answered, a reply quoting its URL. */
async function startChatStandIn(): Promise<Server> {
	const server = createServer(async (request, response) => {
		if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
			response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here"}}');
			return;
		}
		const body = await readJson(request);
		chatRequests.push(body);
		const toolMessage = body.messages.find((message) => message.role === 'tool');
		const toolName = body.tools?.[0]?.function.name ?? 'missing_tool';
		const message = toolMessage
			? { role: 'assistant', content: `Here is your picture: ${/https?:\/\/[^\s"\\]+/.exec(String(toolMessage.content))?.[0] ?? 'no URL'}` }
			: {
					role: 'assistant',
					content: null,
					tool_calls: [{ id: 'call_1', type: 'function', function: { name: toolName, arguments: JSON.stringify({ prompt: 'A lighthouse on a cliff at sunset' }) } }],
				};
		const answer = {
			id: `chatcmpl-${chatRequests.length}`,
			object: 'chat.completion',
			created: Math.floor(Date.now() / 1000),
			model: 'gpt-4o-mini',
			choices: [{ index: 0, message, finish_reason: toolMessage ? 'stop' : 'tool_calls' }],
			usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
		};
		response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return server;
}

beforeAll(async () => {
	standIn = await startChatStandIn();
	session = await openSession('agent');
	const credentials = join(session.userFolder, 'openai-credentials.json');
	const url = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}/v1`;
	writeFileSync(credentials, JSON.stringify([{ ...OPENAI_CREDENTIAL, type: 'openAiApi', data: { apiKey: 'sk-test-0123456789', url } }]));
	await session.cli(['import:credentials', `--input=${credentials}`]);
	await session.importWorkflows([{ ...readExample('imagegen-ai-agent.json'), id: WORKFLOW_ID }]);
	const { run, result } = await session.execute(WORKFLOW_ID);
	const raw = `${result.stdout}\n${result.stderr}`;
	if (run.status !== 'success') throw new Error(`the agent run ended ${run.status}: ${run.data.resultData.error?.message}\n${raw}`);
	agentOutput = outputOf(run, 'AI Agent', raw)[0]!.json as Record<string, unknown>;
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await session?.close();
	await new Promise((resolve) => standIn?.close(resolve));
});

test('the agent calls ImageGen once and the URL reaches the model and the answer', async () => {
	expect(chatRequests).toHaveLength(2);
	expect(chatRequests[0]!.tools?.length).toBe(1);
	const toolMessage = chatRequests[1]!.messages.find((message) => message.role === 'tool')!;
	const toolText = String(toolMessage.content);
	expect(toolText).not.toMatch(/b64_json|base64|iVBORw0KGgo/);
	const url = new RegExp(`${session.server.origin}/files/[\\w-]+\\.png`).exec(toolText)?.[0];
	expect(url).toBeDefined();
	expect(toolText).toMatch(/expiresAt/);
	expect(toolText).toMatch(/costUsd/);
	expect(String(agentOutput.output)).toContain(url!);
	expect((await download(url!)).headers.get('content-type')).toBe('image/png');

	const usage = await fetch(`${session.server.baseUrl}/usage`, { headers: { authorization: `Bearer ${session.server.apiKey}` } });
	expect(((await usage.json()) as { total: { images: number } }).total.images).toBe(1);
});
