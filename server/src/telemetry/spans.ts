/**
 * The service's own spans and the trace context it passes on, through the OpenTelemetry API alone.
 * Without a registered SDK (no OTEL_EXPORTER_OTLP_ENDPOINT: telemetry/start-tracing.ts) every span
 * is the API's no-op one and nothing is injected into outgoing headers, so the calls cost next to
 * nothing when tracing is off.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { ImageGenError } from '../../../core/errors';

export { SpanKind };
export type { Attributes, Span };

const tracer = trace.getTracer('imagegen-server');

export interface SpanOptions {
	/** INTERNAL unless given. */
	kind?: SpanKind;
	attributes?: Attributes;
}

/**
 * Runs `work` in a new span, a child of the current one and the current one while `work` runs,
 * ended when it settles. A failure ends it with status ERROR and `error.type` (errorType).
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
	return tracer.startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes && { attributes: options.attributes }) }, async (span) => {
		try {
			return await work(span);
		} catch (error) {
			markFailed(span, errorType(error), error instanceof Error ? error.message : String(error));
			throw error;
		} finally {
			span.end();
		}
	});
}

/** Status ERROR and `error.type`, as the semantic conventions ask of a failed operation. */
export function markFailed(span: Span, type: string, message: string): void {
	span.setAttribute('error.type', type);
	span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * A failure's kind, few enough to group by: our error code (`upstream_failed`, `generation_timeout`,
 * …) where there is one, else the error's class.
 */
export function errorType(error: unknown): string {
	if (error instanceof ImageGenError) return error.code;
	return error instanceof Error ? error.name : '_OTHER';
}

/**
 * The current trace context added to an outgoing request's headers (W3C `traceparent`, and
 * `tracestate` when the trace has one), so a host that traces continues our trace; untouched when
 * tracing is off. Answers the same object.
 */
export function withTraceContext(headers: Record<string, string>): Record<string, string> {
	propagation.inject(context.active(), headers);
	return headers;
}
