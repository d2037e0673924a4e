/**
 * `fastify.provenance`: the marker every generated image passes through before it is stored or
 * inlined, and the start-up line that says who signs. With --provenance off, a marker that
 * leaves bytes alone. The signing credentials are read (or made) at start, so a bad certificate
 * stops the service before it takes a request.
 */
import { existsSync } from 'node:fs';
import fp from 'fastify-plugin';
import { CoseSigner } from '../provenance/cose-signer';
import { MARKING_WORKER_SCRIPT, MarkingPool } from '../provenance/marking-pool';
import { C2paProvenanceMarker, UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import { loadSigningCredentials } from '../provenance/signing-credentials';
import { SizeRoutedMarker } from '../provenance/size-routed-marker';
import { serviceVersion } from '../runtime/service-version';

declare module 'fastify' {
	interface FastifyInstance {
		provenance: { marker: ProvenanceMarker; startLine: string };
	}
}

export default fp(
	async (fastify) => {
		const { provenance, dataDir } = fastify.config;
		if (!provenance.enabled) {
			fastify.decorate('provenance', { marker: UNMARKED, startLine: 'provenance: off (generated images are not marked)' });
			return;
		}
		const credentials = await loadSigningCredentials({ certPath: provenance.certPath, keyPath: provenance.keyPath, dataDir, organization: 'imagegen-server' });
		const options = { key: credentials.key, chain: credentials.chain, includePrompt: provenance.includePrompt, creatorTool: `imagegen-server ${serviceVersion()}` };
		// The C2PA engine (WebAssembly that stays resident once compiled) is compiled by the first
		// image that needs it, so a service that only hosts uploads as they are never carries it.
		const inThread = new C2paProvenanceMarker({ ...options, signer: new CoseSigner(options.key, options.chain) });
		// Large images go to worker threads (size-routed-marker.ts). Run from the TypeScript sources
		// (the test suites' in-process apps) there is no compiled worker: every image stays in-thread.
		const pool = provenance.markingThreads > 0 && existsSync(MARKING_WORKER_SCRIPT) ? new MarkingPool({ workerData: options, threads: provenance.markingThreads }) : undefined;
		const marker = new SizeRoutedMarker(inThread, pool, (thread, seconds) => fastify.metrics.marking({ thread, seconds }));
		fastify.addHook('onClose', () => marker.close());
		fastify.decorate('provenance', { marker, startLine: `C2PA signer: ${credentials.description}` });
	},
	{ name: 'provenance', dependencies: ['config', 'metrics'] },
);
