/**
 * Traces of the built service (its CLI as a child process, since the OpenTelemetry SDK is
 * process-wide) sent to a loopback stand-in of an OTLP collector as OTLP/HTTP JSON, with Replicate's
 * stand-in as the host: the request's SERVER span continues the caller's `traceparent`, each host
 * call is a CLIENT span with the GenAI attributes in the same trace, the host receives that span's
 * `traceparent`, and a failing host shows as `error.type` with status ERROR. The batch delay is far
 * longer than the suite: every span arrives through the flush at the service's stop. Without an
 * OTLP endpoint, the service loads none of the SDK.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, TEST_API_KEY, type RunningServer } from '../../helpers/server';
import { fakeHostsEnv, startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { eventually, postJson, type ApiAnswer } from '../support/http';
import { startRecordingServer, type RecordingServer } from '../support/recording-server';
import { makeImage } from '../support/media';
import { SPAN_KIND, STATUS_ERROR, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';

const LOADED_AT_EXIT = join(__dirname, '..', 'support', 'loaded-at-exit.cjs');
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const FAILING_TRACE = '0af7651916cd43dd8448eb211c80319c';
const FAILING_SPAN = 'b7ad6b7169203331';
const WEBHOOK_TRACE = '5b8aa5a2d2c872e8321cf37308d69df2';
const SEED = 4242;

let fake: FakeHosts;
let receiver: OtlpReceiver;
let webhookReceiver: RecordingServer<any>;
let scratch: string;
let succeeded: ApiAnswer;
let failed: ApiAnswer;
let predictionId: string;
let hostTraceparent: string | undefined;
let tracedModules: string[];
let untracedModules: string[];

/** Starts the CLI with the module list written at its exit, runs `traffic`, stops it; answers the modules it loaded. */
async function run(name: string, env: Record<string, string>, traffic: (server: RunningServer) => Promise<void>): Promise<string[]> {
	const modulesFile = join(scratch, `${name}.json`);
	const server = await startServer({
		args: ['--allow-private-urls', '--webhook-allow-private', '--providers', 'p-image=replicate'],
		env: {
			...(fakeHostsEnv(fake.origin) as Record<string, string>),
			NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${LOADED_AT_EXIT}`,
			IMAGEGEN_TEST_LOADED_MODULES: modulesFile,
			...env,
		},
	});
	try {
		await traffic(server);
	} finally {
		await server.stop({ removeData: true });
	}
	return JSON.parse(readFileSync(modulesFile, 'utf8')) as string[];
}

const generate = (server: RunningServer, traceparent: string, fields: Record<string, unknown> = {}) =>
	postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A lighthouse', seed: SEED, response_format: 'b64_json', ...fields }, { headers: { traceparent } });

beforeAll(async () => {
	scratch = mkdtempSync(join(tmpdir(), 'imagegen-traces-'));
	[fake, receiver, webhookReceiver] = await Promise.all([startFakeHosts(), startOtlpReceiver(), startRecordingServer((_call, response) => response.writeHead(204).end())]);
	fake.setImage(await makeImage('png', 64, 64));
	const tracing = {
		OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
		OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
		// Nothing is exported before the stop: what arrives came with the shutdown's flush.
		OTEL_BSP_SCHEDULE_DELAY: '600000',
	};
	tracedModules = await run('traced', tracing, async (server) => {
		succeeded = await generate(server, `00-${CALLER_TRACE}-${CALLER_SPAN}-01`);
		predictionId = fake.predictionsMade()[0]!;
		hostTraceparent = fake.callsTo('POST', '/v1/models/')[0]?.headers.traceparent as string | undefined;
		fake.script('POST', '/v1/models/', { status: 422, body: { detail: 'refused for this test' } }, 1);
		failed = await generate(server, `00-${FAILING_TRACE}-${FAILING_SPAN}-01`);
		const hooked = await generate(server, `00-${WEBHOOK_TRACE}-${CALLER_SPAN}-01`, { webhook_url: `${webhookReceiver.origin}/hook` });
		expect(hooked.status).toBe(200);
		expect(await eventually(() => webhookReceiver.calls.length > 0)).toBe(true);
		expect(receiver.spans).toEqual([]);
	});
	untracedModules = await run('untraced', {}, async (server) => {
		expect((await generate(server, `00-${CALLER_TRACE}-${CALLER_SPAN}-01`)).status).toBe(200);
	});
}, 60_000);

afterAll(async () => {
	await Promise.all([fake?.close(), receiver?.close(), webhookReceiver?.close()]);
	rmSync(scratch, { recursive: true, force: true });
});

const inTrace = (traceId: string) => receiver.spans.filter((span) => span.traceId === traceId);
const named = (traceId: string, name: string) => inTrace(traceId).filter((span) => span.name === name);

/** The span's ancestors within the trace, nearest first. */
function ancestorsOf(span: ReceivedSpan): ReceivedSpan[] {
	const byId = new Map(inTrace(span.traceId).map((each) => [each.spanId, each]));
	const chain: ReceivedSpan[] = [];
	for (let parent = byId.get(span.parentSpanId); parent; parent = byId.get(parent.parentSpanId)) chain.push(parent);
	return chain;
}

test('the answers are what the traffic asked for', () => {
	expect(succeeded.status).toBe(200);
	expect(failed.status).toBe(502);
	expect(receiver.refused).toBe(0);
});

test("the request's SERVER span continues the caller's trace: the caller's span is its parent", () => {
	const [request] = inTrace(CALLER_TRACE).filter((span) => span.kind === SPAN_KIND.SERVER);
	expect(request).toBeDefined();
	expect(request!.parentSpanId).toBe(CALLER_SPAN);
	expect(request!.attributes['http.route']).toBe('/v1/images/generations');
	expect(request!.resource['service.name']).toBe('imagegen-server');
});

test('the host call is a CLIENT span `generate_content p-image` with the GenAI attributes, below the request', () => {
	const calls = named(CALLER_TRACE, 'generate_content p-image');
	expect(calls).toHaveLength(1);
	const [call] = calls;
	expect(call!.kind).toBe(SPAN_KIND.CLIENT);
	expect(call!.attributes).toMatchObject({
		'gen_ai.operation.name': 'generate_content',
		'gen_ai.provider.name': 'replicate',
		'gen_ai.request.model': 'p-image',
		'gen_ai.output.type': 'image',
		'gen_ai.request.seed': SEED,
		'gen_ai.request.choice.count': 1,
		'gen_ai.response.id': predictionId,
		'server.address': '127.0.0.1',
	});
	expect(call!.statusCode).not.toBe(STATUS_ERROR);
	expect(ancestorsOf(call!).map((span) => span.name)).toEqual(expect.arrayContaining(['generation job', 'request']));
});

test("the host receives the host call's own span as the parent in its traceparent", () => {
	const [call] = named(CALLER_TRACE, 'generate_content p-image');
	expect(hostTraceparent).toBe(`00-${CALLER_TRACE}-${call!.spanId}-01`);
});

test('the job and the marking of its image are spans of the same trace', () => {
	expect(named(CALLER_TRACE, 'generation job')).toHaveLength(1);
	const [marking] = named(CALLER_TRACE, 'mark image');
	expect(marking).toBeDefined();
	expect(ancestorsOf(marking!).map((span) => span.name)).toContain('generation job');
});

test('a failing host: its call ends with status ERROR and error.type the code the client got', () => {
	const [call] = named(FAILING_TRACE, 'generate_content p-image');
	expect(call).toBeDefined();
	expect(call!.statusCode).toBe(STATUS_ERROR);
	expect(call!.attributes['error.type']).toBe(failed.body.error.code);
	const [request] = inTrace(FAILING_TRACE).filter((span) => span.kind === SPAN_KIND.SERVER);
	expect(request!.parentSpanId).toBe(FAILING_SPAN);
	expect(request!.statusCode).toBe(STATUS_ERROR);
});

test('a webhook delivery is a span of its own, naming the receiving host', () => {
	const deliveries = receiver.spans.filter((span) => span.name === 'webhook delivery');
	expect(deliveries).toHaveLength(1);
	expect(deliveries[0]!.attributes).toMatchObject({ 'imagegen.webhook.event': 'generation.succeeded', 'imagegen.webhook.attempt': 1, 'server.address': '127.0.0.1' });
	expect(deliveries[0]!.statusCode).not.toBe(STATUS_ERROR);
});

test('the exported resource does not carry the command line, where the API key stands', () => {
	const resource = receiver.spans[0]!.resource;
	expect(JSON.stringify(resource)).not.toContain(TEST_API_KEY);
	expect(resource['process.command_args']).toBeUndefined();
});

test('the SDK is loaded only when an OTLP endpoint is set', () => {
	const sdk = (modules: string[]) => modules.filter((path) => /[\\/]node_modules[\\/](@opentelemetry[\\/]sdk-|@fastify[\\/]otel)/.test(path));
	expect(sdk(tracedModules).length).toBeGreaterThan(0);
	expect(sdk(untracedModules)).toEqual([]);
});
