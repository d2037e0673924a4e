/**
 * A worker thread of the marking pool (marking-pool.ts): the CPU-heavy part of marking an image
 * (XMP embedding, c2pa-rs hashing and building the manifest, the COSE signature) runs here, off
 * the service's event loop. Each message is one image; the answer carries the job's id.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { KeyObject } from 'node:crypto';
import { streamedBytes } from '../runtime/young-generation';
import { CoseSigner } from './cose-signer';
import { C2paProvenanceMarker, convertedBytesRead, generatedBytesRead, type ConvertedUploadFacts, type GeneratedImageFacts } from './provenance-marker';

export interface MarkingWorkerData {
	key: KeyObject;
	chain: Uint8Array[];
	includePrompt: boolean;
	creatorTool: string;
}

export type MarkingJob = { id: number; kind: 'generated'; facts: GeneratedImageFacts } | { id: number; kind: 'converted'; facts: ConvertedUploadFacts };

const data = workerData as MarkingWorkerData;
const marker = new C2paProvenanceMarker({
	signer: new CoseSigner(data.key, data.chain.map(asBuffer)),
	includePrompt: data.includePrompt,
	creatorTool: data.creatorTool,
});

parentPort!.on('message', (job: MarkingJob) => {
	const marked = job.kind === 'generated' ? marker.markGenerated(revivedGenerated(job.facts)) : marker.markConverted(revivedConverted(job.facts));
	marked
		.then(
			(result) => parentPort!.postMessage({ id: job.id, marked: result }, ownBuffer(result.bytes)),
			(error: unknown) => parentPort!.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
		)
		// The job's copies are garbage now, outside this thread's small JavaScript heap, where V8
		// would leave tens of MB of them until it next needs a collection.
		.finally(() => streamedBytes(job.kind === 'generated' ? generatedBytesRead(job.facts) : convertedBytesRead(job.facts)));
});

/**
 * The marked image's memory, handed over to the service's thread instead of copied, when the
 * image is all of it (c2pa-rs answers a copy of its own; never the engine's WebAssembly memory).
 */
function ownBuffer(bytes: Buffer): ArrayBuffer[] {
	const { buffer } = bytes;
	return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? [buffer] : [];
}

/** Buffers arrive as plain Uint8Arrays (structured clone): the marker reads them as Buffers. */
function asBuffer(bytes: Uint8Array): Buffer {
	return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function revivedGenerated(facts: GeneratedImageFacts): GeneratedImageFacts {
	return { ...facts, bytes: asBuffer(facts.bytes), ...(facts.source ? { source: { ...facts.source, bytes: asBuffer(facts.source.bytes) } } : {}) };
}

function revivedConverted(facts: ConvertedUploadFacts): ConvertedUploadFacts {
	const { original } = facts;
	return {
		...facts,
		bytes: asBuffer(facts.bytes),
		original: {
			...original,
			bytes: asBuffer(original.bytes),
			...(original.exif ? { exif: asBuffer(original.exif) } : {}),
			...(original.xmp ? { xmp: asBuffer(original.xmp) } : {}),
		},
	};
}
