/**
 * A loopback stand-in for an OpenTelemetry collector's OTLP/HTTP traces endpoint: POST /v1/traces
 * with a JSON ExportTraceServiceRequest (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), answered 200 with an
 * empty ExportTraceServiceResponse, as the OTLP specification's HTTP transport describes. Every span
 * received is kept, flattened with its resource's attributes. A body in another encoding is refused
 * (415) and counted, so a suite notices an exporter that does not send JSON.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** OTLP's AnyValue as JSON: one of these fields (int64 may come as a string). */
interface AnyValue {
	stringValue?: string;
	boolValue?: boolean;
	intValue?: number | string;
	doubleValue?: number;
	arrayValue?: { values?: AnyValue[] };
}
interface KeyValue {
	key: string;
	value: AnyValue;
}

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface ReceivedSpan {
	traceId: string;
	spanId: string;
	/** Empty for a root span. */
	parentSpanId: string;
	name: string;
	/** OTLP's SpanKind: 1 INTERNAL, 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER. */
	kind: number;
	attributes: Record<string, AttributeValue>;
	/** OTLP's StatusCode: 0 UNSET, 1 OK, 2 ERROR. */
	statusCode: number;
	resource: Record<string, AttributeValue>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
export const STATUS_ERROR = 2;

export interface OtlpReceiver {
	/** For OTEL_EXPORTER_OTLP_ENDPOINT: the exporter adds /v1/traces. */
	origin: string;
	spans: ReceivedSpan[];
	/** Requests refused for not being OTLP JSON on /v1/traces. */
	refused: number;
	close(): Promise<void>;
}

function valueOf(value: AnyValue): AttributeValue {
	if (value.stringValue !== undefined) return value.stringValue;
	if (value.boolValue !== undefined) return value.boolValue;
	if (value.intValue !== undefined) return Number(value.intValue);
	if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
	return value.doubleValue;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
	return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

/** The spans of one ExportTraceServiceRequest (resourceSpans → scopeSpans → spans). */
function spansOf(request: any): ReceivedSpan[] {
	return (request.resourceSpans ?? []).flatMap((resourceSpans: any) => {
		const resource = attributesOf(resourceSpans.resource?.attributes);
		return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans: any) =>
			(scopeSpans.spans ?? []).map((span: any) => ({
				traceId: span.traceId,
				spanId: span.spanId,
				parentSpanId: span.parentSpanId ?? '',
				name: span.name,
				kind: span.kind,
				attributes: attributesOf(span.attributes),
				statusCode: span.status?.code ?? 0,
				resource,
			})),
		);
	});
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const json = (request.headers['content-type'] ?? '').startsWith('application/json');
			if (request.method !== 'POST' || request.url !== '/v1/traces' || !json) {
				receiver.refused++;
				response.writeHead(415, { 'content-type': 'application/json' }).end('{}');
				return;
			}
			receiver.spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString())));
			response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const receiver: OtlpReceiver = {
		origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		spans: [],
		refused: 0,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
	return receiver;
}
