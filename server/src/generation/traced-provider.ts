/**
 * One CLIENT span per call of a model's host, named `generate_content <model>` with the attributes
 * of the OpenTelemetry GenAI semantic conventions: what was asked (operation, provider, model,
 * output type, seed, how many images), of whom (`server.address`, the configured host's name), the
 * host's id for its job once it names one, and `error.type` with status ERROR when the call fails.
 * Each member of a fallback chain is wrapped on its own, so a chain that tried two hosts shows two
 * calls. The host's HTTP calls happen inside the span, which is how they carry its `traceparent`
 * (providers/provider-http.ts). Without tracing the spans are the API's no-op ones.
 */
import type { ModelId } from '../../../core/models';
import { inSpan, SpanKind, type Attributes, type Span } from '../telemetry/spans';
import type { GenerationContext, GenerationProvider } from './provider';

/** Where a host call goes: the model asked for, and the configured base URL of its host (none in process: the sandbox). */
export interface HostCallTarget {
	model: ModelId;
	baseUrl?: string;
}

/** `provider`, each of its calls (a generation, or following a job again) in its own span. */
export function tracedProvider(provider: GenerationProvider, target: HostCallTarget): GenerationProvider {
	const common: Attributes = {
		'gen_ai.operation.name': 'generate_content',
		'gen_ai.provider.name': provider.name,
		'gen_ai.request.model': target.model,
		'gen_ai.output.type': 'image',
		...(target.baseUrl !== undefined && { 'server.address': new URL(target.baseUrl).hostname }),
	};
	const hostCall = <T>(attributes: Attributes, work: (span: Span) => Promise<T>) =>
		inSpan(`generate_content ${target.model}`, { kind: SpanKind.CLIENT, attributes: { ...common, ...attributes } }, work);
	const naming = (context: GenerationContext, span: Span): GenerationContext => ({
		...context,
		hostJobNamed: (job) => {
			span.setAttribute('gen_ai.response.id', job.id);
			context.hostJobNamed?.(job);
		},
	});
	const { resume, cancel } = provider;
	return {
		name: provider.name,
		...(provider.limits && { limits: provider.limits }),
		...(provider.hasJobIds !== undefined && { hasJobIds: provider.hasJobIds }),
		generate: (request, context) =>
			hostCall(
				// The service asks each host call for one image (a request for n makes n calls): `n` is then absent.
				{ ...(request.seed !== undefined && { 'gen_ai.request.seed': request.seed }), 'gen_ai.request.choice.count': request.n ?? 1 },
				(span) => provider.generate(request, naming(context, span)),
			),
		...(resume && { resume: (job, context) => hostCall({ 'gen_ai.response.id': job.id }, (span) => resume.call(provider, job, naming(context, span))) }),
		...(cancel && { cancel: (job) => cancel.call(provider, job) }),
	};
}
