/**
 * `fastify.provenance`: the marker every generated image passes through before it is stored or
 * inlined, and the start-up line that says who signs. With --provenance off, a marker that
 * leaves bytes alone. The signing credentials are read (or made) at start, so a bad certificate
 * stops the service before it takes a request.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import fp from 'fastify-plugin';
import { CoseSigner } from '../provenance/cose-signer';
import { MARKING_WORKER_SCRIPT, PooledProvenanceMarker } from '../provenance/marking-pool';
import { C2paProvenanceMarker, UNMARKED, type ProvenanceMarker } from '../provenance/provenance-marker';
import { loadSigningCredentials } from '../provenance/signing-credentials';
import { serviceVersion } from '../service-version';

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
		const creatorTool = `imagegen-server ${serviceVersion()}`;
		// The C2PA engine (≈ 15 MB resident) is compiled by the first image that needs it, so a
		// service that only hosts uploads as they are never carries it. Run from the TypeScript
		// sources (the test suites' in-process apps) there is no compiled worker: it marks in-thread.
		const marker = existsSync(MARKING_WORKER_SCRIPT)
			? new PooledProvenanceMarker({
					workerData: { key: credentials.key, chain: credentials.chain, includePrompt: provenance.includePrompt, creatorTool },
					// One core is left to the event loop; the pool takes the rest, up to two.
					threads: Math.max(1, Math.min(2, availableParallelism() - 1)),
				})
			: new C2paProvenanceMarker({ signer: new CoseSigner(credentials.key, credentials.chain), includePrompt: provenance.includePrompt, creatorTool });
		if (marker instanceof PooledProvenanceMarker) fastify.addHook('onClose', () => marker.close());
		fastify.decorate('provenance', { marker, startLine: `C2PA signer: ${credentials.description}` });
	},
	{ name: 'provenance', dependencies: ['config'] },
);
