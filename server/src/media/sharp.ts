/**
 * sharp, loaded on its first use rather than at start: libvips brings resident memory of its own
 * that a service hosting videos and files as they are never needs. Call sites use it exactly as
 * the package (`sharp(input, options)`, `sharp.concurrency()`); types come from the package itself.
 */
import type SharpModule from 'sharp';

let loaded: typeof SharpModule | undefined;

function load(): typeof SharpModule {
	if (loaded === undefined) {
		// A synchronous require keeps every call site synchronous, as sharp's own API is.
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		loaded = require('sharp') as typeof SharpModule;
		// Every use is one-shot work (a conversion, a fit, a rendered image): caching decoded images
		// only costs memory.
		loaded.cache(false);
	}
	return loaded;
}

const sharp = new Proxy(function lazySharp() {} as unknown as typeof SharpModule, {
	apply: (_target, _this, args: Parameters<typeof SharpModule>) => load()(...args),
	get: (_target, property) => Reflect.get(load(), property),
}) as typeof SharpModule;

export default sharp;
