/**
 * A worker thread of the marking pool (marking-pool.ts, run by piscina): the CPU-heavy part of
 * marking an image (XMP embedding, c2pa-rs hashing and building the manifest, the COSE signature)
 * runs here, off the service's event loop. Each call is one image. A marking that fails is answered
 * as such, so the pool tells it apart from a worker that died.
 */
import { workerData } from 'node:worker_threads';
import type { KeyObject } from 'node:crypto';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { releaseBytes } from '../media/release-bytes';
import { CoseSigner } from './cose-signer';
import { C2paProvenanceMarker, type ConvertedUploadFacts, type GeneratedImageFacts, type MarkedImage, type MarkedVideo, type VideoMarkingJob } from './provenance-marker';

export interface MarkingWorkerData {
	key: KeyObject;
	chain: Uint8Array[];
	includePrompt: boolean;
	creatorTool: string;
}

export type MarkingTask = { kind: 'generated'; facts: GeneratedImageFacts } | { kind: 'converted'; facts: ConvertedUploadFacts } | { kind: 'video'; facts: VideoMarkingJob };

/** `marked.bytes` arrives as a plain Uint8Array (structured clone). */
export type MarkingAnswer = { marked: MarkedImage } | { failed: string };

/** A video is read from and written to files: only the answer comes back. */
export type VideoMarkingAnswer = { video: MarkedVideo } | { failed: string };

const data = workerData as MarkingWorkerData;
const marker = new C2paProvenanceMarker({
	signer: new CoseSigner(data.key, data.chain.map(asBuffer)),
	includePrompt: data.includePrompt,
	creatorTool: data.creatorTool,
});

/** Answers a MarkingAnswer, the marked one wrapped so that piscina transfers its bytes. */
export default async function markInWorker(task: MarkingTask): Promise<MarkingAnswer | VideoMarkingAnswer | ReturnType<typeof move>> {
	if (task.kind === 'video') return markVideo(task.facts);
	let marked: MarkedImage;
	try {
		marked = task.kind === 'generated' ? await marker.markGenerated(revivedGenerated(task.facts)) : await marker.markConverted(revivedConverted(task.facts));
	} catch (error) {
		return { failed: error instanceof Error ? error.message : String(error) };
	} finally {
		releaseTask(task);
	}
	const answer: MarkingAnswer = { marked };
	// piscina posts the value with these buffers in its transfer list.
	return move({ [transferableSymbol]: ownBuffer(marked.bytes), [valueSymbol]: answer });
}

async function markVideo(job: VideoMarkingJob): Promise<VideoMarkingAnswer> {
	try {
		return { video: await marker.markVideo(job.firstFrame ? { ...job, firstFrame: { ...job.firstFrame, bytes: asBuffer(job.firstFrame.bytes) } } : job) };
	} catch (error) {
		return { failed: error instanceof Error ? error.message : String(error) };
	}
}

/**
 * The task's images are this thread's own copies (structured clones), read by now. This thread
 * allocates almost nothing on V8's heap, so it collects rarely: left to the collector, the copies
 * of dozens of images would stay resident until it did. A marked image that is its input is not
 * released: it goes back to the service.
 */
function releaseTask(task: Exclude<MarkingTask, { kind: 'video' }>): void {
	const images = task.kind === 'generated' ? [drawnBytes(task.facts), task.facts.source?.bytes, ...(task.facts.inputs ?? []).map((input) => input.bytes)] : [task.facts.bytes, task.facts.original.bytes, task.facts.original.exif, task.facts.original.xmp];
	for (const bytes of images) if (bytes) releaseBytes(bytes);
}

/** The image as drawn: its encoded bytes, or its pixels (handed over, already given back by the marking). */
function drawnBytes(facts: GeneratedImageFacts): Uint8Array {
	return 'pixels' in facts ? facts.pixels.data : facts.bytes;
}

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
	return {
		...facts,
		...('pixels' in facts ? { pixels: { ...facts.pixels, data: asBuffer(facts.pixels.data) } } : { bytes: asBuffer(facts.bytes) }),
		...(facts.source ? { source: { ...facts.source, bytes: asBuffer(facts.source.bytes) } } : {}),
		...(facts.inputs ? { inputs: facts.inputs.map((input) => ({ ...input, bytes: asBuffer(input.bytes) })) } : {}),
	};
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
