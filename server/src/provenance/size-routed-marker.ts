/**
 * Sends each image to where marking it costs the service least. c2pa-rs spends a fixed share on
 * any image plus time in proportion to the bytes it hashes. The event loop marks small images
 * itself: the hop to a worker (copying the bytes there and back, waking the thread) costs about as
 * much as the marking saves, and on two cores it bought no throughput. From OFFLOAD_FROM_BYTES on
 * the pool marks them, so one caller's large image does not hold every other request while it is
 * hashed. When the pool is closing or its queue is full the event loop marks them too: the
 * provider has already been paid for the image, and refusing it would throw the work away.
 */
import type { MarkingObservation } from '../metrics/service-metrics';
import type { MarkingPool } from './marking-pool';
import {
	convertedBytesRead,
	generatedBytesRead,
	type ConvertedUploadFacts,
	type GeneratedImageFacts,
	type MarkedImage,
	type MarkedVideo,
	type ProvenanceMarker,
	type VideoMarkingJob,
} from './provenance-marker';

/**
 * Between a 16 KB PNG, for which the pool cost throughput on two cores, and a 1 MB one, for which
 * it gained throughput and kept other requests' p99 at that of an unmarked service.
 */
export const OFFLOAD_FROM_BYTES = 256 * 1024;

/** The metric's own label values: where an image was marked. */
export type MarkingThread = MarkingObservation['thread'];

export class SizeRoutedMarker implements ProvenanceMarker {
	constructor(
		private readonly inThread: ProvenanceMarker,
		/** None: every image on the event loop (`--marking-threads 0`), still observed. */
		private readonly pool: MarkingPool | undefined,
		/** Told where each image was marked and how long it took. */
		private readonly observe: (thread: MarkingThread, seconds: number) => void = () => undefined,
	) {}

	markGenerated(image: GeneratedImageFacts): Promise<MarkedImage> {
		return this.timed(generatedBytesRead(image), (marker) => marker.markGenerated(image));
	}

	markConverted(upload: ConvertedUploadFacts): Promise<MarkedImage> {
		return this.timed(convertedBytesRead(upload), (marker) => marker.markConverted(upload));
	}

	/** Every video to the pool when there is one: hashing it would hold the event loop for long. */
	markVideo(job: VideoMarkingJob, signal?: AbortSignal): Promise<MarkedVideo> {
		return (this.pool ?? this.inThread).markVideo(job, signal);
	}

	close(): Promise<void> {
		return this.pool?.close() ?? Promise.resolve();
	}

	private async timed(bytesRead: number, mark: (marker: ProvenanceMarker) => Promise<MarkedImage>): Promise<MarkedImage> {
		const pool = bytesRead >= OFFLOAD_FROM_BYTES && this.pool?.canTake() ? this.pool : undefined;
		const thread: MarkingThread = pool ? 'worker' : 'event_loop';
		const started = performance.now();
		const marked = await mark(pool ?? this.inThread);
		this.observe(thread, (performance.now() - started) / 1000);
		return marked;
	}
}
