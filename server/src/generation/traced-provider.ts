/**
 * One CLIENT span per call of a model's host (images and videos alike), named `generate_content <model>` with the attributes
 * of the OpenTelemetry GenAI semantic conventions: what was asked (operation, provider, model,
 * output type, seed, how many images), of whom (`server.address`, the configured host's name), the
 * host's id for its job once it names one, and `error.type` with status ERROR when the call fails.
 * Each member of a fallback chain is wrapped on its own, so a chain that tried two hosts shows two
 * calls. The host's HTTP calls happen inside the span, which is how they carry its `traceparent`
 * (providers/provider-http.ts). Without tracing the spans are the API's no-op ones.
 */
import type { ModelLimits } from '../../../core/models';
import { inSpan, SpanKind, type Attributes, type Span } from '../telemetry/spans';
import type { GenerationContext, HostJobRef } from './provider';

/** Where a host call goes: the model asked for, what it makes, and the configured base URL of its host (none in process: the sandbox). */
export interface HostCallTarget {
	model: string;
	outputType: 'image' | 'video';
	baseUrl?: string;
}

/** What the span reads of a request: its seed and how many it asks for. */
interface HostRequest {
	seed?: number;
	n?: number;
}

type HostCallContext = Pick<GenerationContext, 'hostJobStarted' | 'hostJobNamed'>;

/** What an image provider (provider.ts) and a video provider (video/video-provider.ts) have in common. */
interface HostCalls {
	readonly name: string;
	readonly limits?: ModelLimits;
	readonly hasJobIds?: boolean;
	generate(request: HostRequest, context: HostCallContext): Promise<unknown>;
	resume?(job: HostJobRef, context: HostCallContext): Promise<unknown>;
	cancel?(job: HostJobRef): Promise<void>;
}

/**
 * `provider`, each of its calls (a generation, or following a job again) in its own span. The
 * provider's own methods are called on it, not copied: a provider may be a class instance.
 */
export function tracedProvider<Host extends HostCalls>(provider: Host, target: HostCallTarget): Host {
	const common: Attributes = {
		'gen_ai.operation.name': 'generate_content',
		'gen_ai.provider.name': provider.name,
		'gen_ai.request.model': target.model,
		'gen_ai.output.type': target.outputType,
		...(target.baseUrl !== undefined && { 'server.address': new URL(target.baseUrl).hostname }),
	};
	const hostCall = <T>(attributes: Attributes, work: (span: Span) => Promise<T>) =>
		inSpan(`generate_content ${target.model}`, { kind: SpanKind.CLIENT, attributes: { ...common, ...attributes } }, work);
	const { resume, cancel } = provider;
	const traced: HostCalls = {
		name: provider.name,
		...(provider.limits && { limits: provider.limits }),
		...(provider.hasJobIds !== undefined && { hasJobIds: provider.hasJobIds }),
		generate: (request, context) =>
			hostCall(
				// The service asks each image call for one image (a request for n makes n calls): `n` is then absent.
				{ ...(request.seed !== undefined && { 'gen_ai.request.seed': request.seed }), 'gen_ai.request.choice.count': request.n ?? 1 },
				(span) => provider.generate(request, naming(context, span)),
			),
		...(resume && { resume: (job, context) => hostCall({ 'gen_ai.response.id': job.id }, (span) => resume.call(provider, job, naming(context, span))) }),
		...(cancel && { cancel: (job) => cancel.call(provider, job) }),
	};
	// Every member of both provider interfaces is above, each with the provider's own types.
	return traced as Host;
}

/**
 * The call's context, telling its span the host's id for the job. `hostJobStarted` stays absent
 * where it was: a provider may work differently without it (Pruna's synchronous create).
 */
function naming<Context extends HostCallContext>(context: Context, span: Span): Context {
	const { hostJobStarted } = context;
	return {
		...context,
		hostJobNamed: (job: HostJobRef) => {
			span.setAttribute('gen_ai.response.id', job.id);
			context.hostJobNamed?.(job);
		},
		...(hostJobStarted && {
			hostJobStarted: async (job: HostJobRef) => {
				span.setAttribute('gen_ai.response.id', job.id);
				await hostJobStarted.call(context, job);
			},
		}),
	};
}
