/**
 * `--providers p-image=pruna|replicate`: hosts tried in order for one model. The next host is
 * tried only after a NothingMadeError, a failure that proves the previous host made nothing (see
 * provider-http.ts: a 429 or a refused connection); a 5xx to the create, a time-out, an accepted
 * job that later failed, or a bad output ends the generation there, because the previous host may
 * already have made (and billed) the image. A job one member accepted is followed again (`resume`)
 * or canceled by that member, the one its HostJobRef names.
 */
import { ImageGenError } from '../../../core/errors';
import type { ModelLimits } from '../../../core/models';
import { CHAIN_SEPARATOR } from '../config/provider-selection';
import type { GenerationProvider, HostJobRef } from './provider';
import { NothingMadeError } from './providers/provider-http';

export function providerChain(members: readonly GenerationProvider[]): GenerationProvider {
	if (members.length === 0) throw new Error('a provider chain needs at least one provider');
	if (members.length === 1) return members[0]!;
	const name = members.map((member) => member.name).join(CHAIN_SEPARATOR);
	const memberNamed = (job: HostJobRef): GenerationProvider => {
		const member = members.find((each) => each.name === job.provider);
		if (!member) throw new ImageGenError(500, `The job's host '${job.provider}' is not a member of the provider chain ${name}`, { code: 'provider_unknown' });
		return member;
	};
	return {
		name,
		limits: narrowestLimits(members),
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
					const images = await member.generate(request, context);
					context.attempted?.({ provider: member.name });
					return images;
				} catch (error) {
					context.attempted?.({ provider: member.name, error });
					const last = index === members.length - 1;
					if (last || context.signal.aborted || !(error instanceof NothingMadeError)) throw error;
				}
			}
			throw new Error('unreachable: the last member of a chain either answers or throws');
		},
	};
}

/** The hosts behind a table entry, in the order they are tried. */
export function chainMembers(provider: GenerationProvider): string[] {
	return provider.name.split(CHAIN_SEPARATOR);
}

/**
 * A request is checked once, before the first host, so it must fit every host it may end up on:
 * the chain takes the least each of its hosts takes.
 */
function narrowestLimits(members: readonly GenerationProvider[]): ModelLimits | undefined {
	const limits = members.map((member) => member.limits).filter((each): each is ModelLimits => each !== undefined);
	if (limits.length === 0) return undefined;
	const smallest = (values: Array<number | undefined>) => {
		const known = values.filter((value): value is number => value !== undefined);
		return known.length > 0 ? Math.min(...known) : undefined;
	};
	const ratioLists = limits.map((each) => each.aspectRatios).filter((each) => each !== undefined);
	const maxInputImages = smallest(limits.map((each) => each.maxInputImages));
	const promptMaxLength = smallest(limits.map((each) => each.promptMaxLength));
	const aspectRatios = ratioLists.length > 0 ? ratioLists.reduce((kept, next) => kept.filter((ratio) => next.includes(ratio))) : undefined;
	return {
		...(maxInputImages === undefined ? {} : { maxInputImages }),
		...(promptMaxLength === undefined ? {} : { promptMaxLength }),
		...(aspectRatios === undefined ? {} : { aspectRatios }),
	};
}
