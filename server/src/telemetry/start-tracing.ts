/**
 * OpenTelemetry traces, only when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or its
 * traces-only form): the SDK, its exporter and the Fastify instrumentation are loaded then and
 * only then, so a service that does not trace never carries them. It must start before the Fastify
 * app is created: @fastify/otel joins each instance as it is made, and its request spans (SERVER,
 * continuing a caller's `traceparent`) are the parents of ours (telemetry/spans.ts).
 *
 * Everything else is the SDK's own standard variables, read by the SDK: the protocol, headers and
 * time-outs of the exporter, the sampler, the batch delays, the resource attributes. Two defaults
 * are ours: the service name `imagegen-server` unless the environment names one, and no process
 * detector unless OTEL_NODE_RESOURCE_DETECTORS chooses the detectors, because it exports the
 * command line, where `--api-keys` may stand.
 */
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';

export const DEFAULT_SERVICE_NAME = 'imagegen-server';

export interface Tracing {
	/** Ends the spans still open and sends those not yet exported; the SDK takes no more after. */
	shutdown(): Promise<void>;
}

/** Whether the environment asks for traces: an OTLP endpoint for them. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
	return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Starts the SDK when the environment asks for traces; undefined (nothing loaded) otherwise. */
export async function startTracing(env: NodeJS.ProcessEnv): Promise<Tracing | undefined> {
	if (!tracingConfigured(env)) return undefined;
	const [{ NodeSDK }, { FastifyOtelInstrumentation }, resources] = await Promise.all([
		import('@opentelemetry/sdk-node'),
		import('@fastify/otel'),
		import('@opentelemetry/resources'),
	]);
	const configuration: Partial<NodeSDKConfiguration> = {
		instrumentations: [new FastifyOtelInstrumentation({ registerOnInitialization: true })],
		// The service's metrics are its Prometheus endpoint and its logs are its standard output:
		// the SDK is given traces alone, and sends nothing to the collector's other endpoints.
		metricReaders: [],
		logRecordProcessors: [],
		// The environment's detector last, so OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win.
		...(env.OTEL_NODE_RESOURCE_DETECTORS === undefined && {
			resourceDetectors: [resources.serviceInstanceIdDetector, resources.hostDetector, resources.osDetector, resources.envDetector],
		}),
		// Given, this would replace a name the environment sets.
		...(!namesService(env) && { serviceName: DEFAULT_SERVICE_NAME }),
	};
	const sdk = new NodeSDK(configuration);
	sdk.start();
	return { shutdown: () => sdk.shutdown() };
}

/** The environment names the service: OTEL_SERVICE_NAME, or `service.name` among OTEL_RESOURCE_ATTRIBUTES. */
function namesService(env: NodeJS.ProcessEnv): boolean {
	if (env.OTEL_SERVICE_NAME?.trim()) return true;
	return (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',').some((pair) => pair.split('=')[0]!.trim() === 'service.name');
}
