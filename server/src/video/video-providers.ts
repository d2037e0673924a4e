/**
 * Which host makes each video model: `--providers p-video=pruna` (or replicate, upstream,
 * sandbox); a model not listed stays on the sandbox. The value is parsed, and a host that makes no
 * video refused, with the configuration (config/provider-selection.ts); this module builds the
 * providers it names, and throws at start when a named host lacks a setting it needs.
 * `p-video=pruna|replicate` is a fallback chain with the images' rule (generation/provider-chain.ts):
 * the next host is tried only after a NothingMadeError, a failure that proves the previous one
 * made nothing (a 429 to the create, a refused connection, a refused input upload); anything else
 * ends the job there, because the previous host may already be making (and billing) the video.
 */
import { ImageGenError } from '../../../core/errors';
import { VIDEO_MODEL_IDS, type VideoModelId } from '../../../core/video-models';
import { CHAIN_SEPARATOR, type VideoProviderName } from '../config/provider-selection';
import type { ProviderConfig } from '../generation/providers';
import { NothingMadeError, type ProviderTiming } from '../generation/providers/provider-http';
import type { HostJobRef } from '../generation/provider';
import { tracedProvider } from '../generation/traced-provider';
import { prunaVideoProvider } from './providers/pruna-video';
import { replicateVideoProvider } from './providers/replicate-video';
import { sandboxVideoProvider } from './providers/sandbox-video';
import { upstreamVideoProvider } from './providers/upstream-video';
import type { VideoProvider } from './video-provider';

type VideoProviderFactory = (model: VideoModelId, config: ProviderConfig, timing: ProviderTiming) => VideoProvider;

const VIDEO_PROVIDER_FACTORIES: Readonly<Record<VideoProviderName, VideoProviderFactory>> = {
	sandbox: (_model, config) => sandboxVideoProvider(config.sandboxDelayMs),
	upstream: (model, config, timing) => upstreamVideoProvider(model, config.providerSettings.upstream, timing),
	replicate: (model, config, timing) => replicateVideoProvider(model, config.providerSettings.replicate, timing),
	pruna: (model, config, timing) => prunaVideoProvider(model, config.providerSettings.pruna, timing),
};

export type VideoProviderTable = Readonly<Record<VideoModelId, VideoProvider>>;

/**
 * Builds the video providers once, at start, beside the image providers; throws an Error naming
 * the setting when a selected host lacks one it needs. `timing` is the hosts' pace unless a caller
 * in process sets it.
 */
export function buildVideoProviderTable(config: ProviderConfig, timing: ProviderTiming = {}): VideoProviderTable {
	const sandbox = sandboxVideoProvider(config.sandboxDelayMs);
	const table = Object.fromEntries(VIDEO_MODEL_IDS.map((model) => [model, tracedProvider(sandbox, { model, outputType: 'video' })])) as Record<VideoModelId, VideoProvider>;
	for (const model of VIDEO_MODEL_IDS) {
		const chain = config.providerSelection[model];
		if (chain === undefined) continue;
		const names = chain.split(CHAIN_SEPARATOR);
		const unknown = names.find((name) => !Object.hasOwn(VIDEO_PROVIDER_FACTORIES, name));
		if (unknown !== undefined) throw new Error(`providers: ${unknown} makes no video; ${model} is served by ${Object.keys(VIDEO_PROVIDER_FACTORIES).join(', ')}`);
		table[model] = videoProviderChain(names.map((name) => videoHostOf(name as VideoProviderName, model, config, { allowPrivateRedirects: config.allowPrivateUrls, ...timing })));
	}
	return table;
}

/** A member of a video model's chain, each of its calls traced (generation/traced-provider.ts). */
function videoHostOf(name: VideoProviderName, model: VideoModelId, config: ProviderConfig, timing: ProviderTiming): VideoProvider {
	const settings: { baseUrl?: string } | undefined = name === 'sandbox' ? undefined : config.providerSettings[name];
	return tracedProvider(VIDEO_PROVIDER_FACTORIES[name](model, config, timing), { model, outputType: 'video', ...(settings?.baseUrl !== undefined && { baseUrl: settings.baseUrl }) });
}

/** Hosts tried in order for one video model (see the module's comment); one host is itself. */
export function videoProviderChain(members: readonly VideoProvider[]): VideoProvider {
	if (members.length === 0) throw new Error('a provider chain needs at least one provider');
	if (members.length === 1) return members[0]!;
	const name = members.map((member) => member.name).join(CHAIN_SEPARATOR);
	const memberNamed = (job: HostJobRef): VideoProvider => {
		const member = members.find((each) => each.name === job.provider);
		if (!member) throw new ImageGenError(500, `The job's host '${job.provider}' is not a member of the provider chain ${name}`, { code: 'provider_unknown' });
		return member;
	};
	return {
		name,
		hasJobIds: members.some((member) => member.hasJobIds === true),
		async resume(job, context) {
			const member = memberNamed(job);
			if (!member.resume) throw new ImageGenError(500, `The ${member.name} provider cannot follow a job it started before`, { code: 'provider_cannot_resume' });
			return await member.resume(job, context);
		},
		async cancel(job) {
			await memberNamed(job).cancel?.(job);
		},
		async generate(request, context) {
			for (const [index, member] of members.entries()) {
				try {
					return await member.generate(request, context);
				} catch (error) {
					const last = index === members.length - 1;
					if (last || context.signal.aborted || !(error instanceof NothingMadeError)) throw error;
				}
			}
			throw new Error('unreachable: the last member of a chain either answers or throws');
		},
	};
}
