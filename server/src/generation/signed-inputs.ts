/**
 * The input images a host is given that carry a C2PA manifest of their own, kept for the output's
 * manifest (provenance/provenance-marker.ts makes each an ingredient). Wraps the loader the host
 * reads its inputs with, so an input counts only once the host was given it, and nothing is
 * fetched again for it. Inputs without a manifest (most) are not kept beyond the host's own use.
 */
import { sniffMedia } from '../../../core/media';
import type { SignedInput } from '../provenance/provenance-marker';
import { mayCarryC2pa } from '../provenance/provenance-scan';

type InputLoader = (index: number) => Promise<Buffer>;

export class SignedInputs {
	private readonly kept = new Map<number, SignedInput>();

	constructor(private readonly load: InputLoader) {}

	/** The host's loader: each input as `load` answers it, the first signed copy of each kept. */
	readonly loadInputImage: InputLoader = async (index) => {
		const bytes = await this.load(index);
		const media = !this.kept.has(index) && mayCarryC2pa(bytes) ? sniffMedia(bytes) : undefined;
		if (media) this.kept.set(index, { index, bytes, media });
		return bytes;
	};

	/** The signed inputs the host was given so far, in the order of the request's `images`. */
	list(): SignedInput[] {
		return [...this.kept.values()].sort((a, b) => a.index - b.index);
	}
}
