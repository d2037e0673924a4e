/**
 * `fastify.provenance`: the marker every generated image passes through before it is stored or
 * inlined, and the start-up line that says who signs. With --provenance off, a marker that
 * leaves bytes alone. The signing credentials are read (or made) at start, so a bad certificate
 * stops the service before it takes a request.
 */
import fp from 'fastify-plugin';
import { CoseSigner } from '../provenance/cose-signer';
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
		const signer = new CoseSigner(credentials.key, credentials.chain);
		// The C2PA engine (≈ 15 MB resident) is compiled by the first image that needs it, so a
		// service that only hosts uploads as they are never carries it.
		fastify.decorate('provenance', {
			marker: new C2paProvenanceMarker({ signer, includePrompt: provenance.includePrompt, creatorTool: `imagegen-server ${serviceVersion()}` }),
			startLine: `C2PA signer: ${credentials.description}`,
		});
	},
	{ name: 'provenance', dependencies: ['config'] },
);
