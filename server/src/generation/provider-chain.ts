/**
 * `--providers p-image=pruna|replicate`: hosts tried in order for one model. The next host is
 * tried only after a NothingMadeError, a failure that proves the previous host made nothing (see
 * provider-http.ts); a time-out, an accepted job that later failed, or a bad output ends the
 * generation there, because the previous host may already have made (and billed) the image.
 */
import type { ModelLimits } from '../../../core/models';
import { CHAIN_SEPARATOR } from '../config/provider-selection';
import type { GenerationProvider } from './provider';
import { NothingMadeError } from './providers/provider-http';

export function providerChain(members: readonly GenerationProvider[]): GenerationProvider {
	if (members.length === 0) throw new Error('a provider chain needs at least one provider');
	if (members.length === 1) return members[0]!;
	return {
		name: members.map((member) => member.name).join(CHAIN_SEPARATOR),
		limits: narrowestLimits(members),
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
