/**
 * One image of a generation, from the provider's call to its entry in the answer: the provider
 * draws it, it is brought to the request (normalize-output.ts) and marked (provenance/), then
 * stored under our retention or sent from memory. Each copy made on the way is given back as soon
 * as the next one is made from it, and the last once it is stored or sent (media/image-bytes.ts);
 * the provider's own bytes only when it made them for this answer.
 */
import { createHash } from 'node:crypto';
import type { GeneratedImage, Provenance } from '../../../core/api';
import { ImageGenError } from '../../../core/errors';
import { sniffMedia, type SniffedMedia } from '../../../core/media';
import { SEED_MAX } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import { ImageBytes } from '../media/image-bytes';
import { UNMARKED, type GeneratedImageFacts, type MarkedImage as ProvenanceMarked, type ProvenanceMarker } from '../provenance/provenance-marker';
import { newProvenancePayload, type ProvenanceRecordStore } from '../provenance/provenance-records';
import type { HostedFiles } from '../storage/hosted-files';
import { InlineBytes, InlineFile } from '../storage/inline-answer';
import { inSpan } from '../telemetry/spans';
import type { GenerationTimings } from './generation-timings';
import type { InputImageSource } from './input-images';
import { normalizeOutput, type FinishedImage } from './normalize-output';
import type { GenerationProvider, ProviderImage, SettledRequest } from './provider';
import { runProvider, type ProviderRun } from './run-provider';
import type { SignedInputs } from './signed-inputs';

/** An inline image as the runner answers it: its stored file or its bytes, sent as `b64_json` (storage/inline-answer.ts). */
type InlineGeneratedImage = Omit<Extract<GeneratedImage, { b64_json: string }>, 'b64_json'> & { b64_json: InlineFile | InlineBytes };

/** One image of a generation's answer: hosted (a URL) or inline. */
export type AnsweredImage = Exclude<GeneratedImage, { b64_json: string }> | InlineGeneratedImage;

/** What every image of one generation is made with. */
export interface ImageProduction {
	/** The request, its seed drawn. */
	generation: GenerationRequest & { seed: number };
	/** The request as the provider gets it, its aspect ratio settled. */
	settled: SettledRequest;
	provider: GenerationProvider;
	run: ProviderRun;
	inputs: InputImageSource;
	hostedFiles: HostedFiles;
	provenance: ProvenanceMarker;
	apiKeyId: string;
	/**
	 * Where a watermark's payload is recorded, with the job its record names: without them (no
	 * job, or nowhere to record) an image carries no watermark, since its payload would name nothing.
	 */
	records?: { store: ProvenanceRecordStore; jobId: string };
	/** The inputs given to the host that carry their own manifest, for each image's; none when nothing is marked. */
	signedInputs?: SignedInputs;
	/** The answer will be replayed: inline images are stored too (GenerationCaller.keepsInlineImages). */
	keepsInlineImages: boolean;
	/** Files of the images made so far: removed again if a later one fails (all or nothing). */
	storedIds: string[];
	/** Where the host's share and the marking's time are counted, when the caller keeps them. */
	timings?: GenerationTimings;
}

/** A marked image, what it is, and what its marks say. */
interface MarkedImage {
	image: ImageBytes;
	media: SniffedMedia;
	provenance: Provenance;
}

/** Image `index` of the generation, and the host that served it. */
export async function produceImage(production: ImageProduction, index: number): Promise<{ answered: AnsweredImage; servedBy: string }> {
	const seed = seedOf(production.generation.seed, index);
	const one: SettledRequest = { ...production.settled, seed };
	delete one.n;
	const { ran, source } = await timedHost(production, async () => {
		const ran = await runProvider(production.provider, one, production.run);
		// A host may hand out more than it was asked for; the client asked for (and the budget
		// reserved) one image per call: the rest are neither fetched, hosted nor paid for.
		return { ran, source: await providerImage(ran.outputs[0]!, ran.servedBy, production) };
	});
	const marked = await markedImage(source, ran.servedBy, production);
	return { answered: await deliver(marked, ran.seedUsed ? seed : undefined, production), servedBy: ran.servedBy };
}

/** The host's share of an image, counted in the generation's timings when it keeps them. */
function timedHost<T>({ timings }: ImageProduction, work: () => Promise<T>): Promise<T> {
	return timings ? timings.timeHost(work) : work();
}

/**
 * One marking of an image, in its own span and counted in the generation's timings; with
 * `--provenance off` nothing is marked, so there is nothing to trace or count.
 */
function mark(production: ImageProduction, facts: GeneratedImageFacts): Promise<ProvenanceMarked> {
	const { provenance, timings } = production;
	if (provenance === UNMARKED) return provenance.markGenerated(facts);
	const marking = () => inSpan('mark image', { attributes: { 'gen_ai.request.model': facts.model, 'imagegen.mark.watermark': facts.watermark !== undefined } }, () => provenance.markGenerated(facts));
	return timings ? timings.timeMark(marking) : marking();
}

/**
 * Image i of a request for n is drawn with seed + i, wrapped into the seed range so every host takes it.
 */
function seedOf(seed: number, index: number): number {
	return (seed + index) % (SEED_MAX + 1);
}

/** The provider's image as bytes: its own, or downloaded from the URL it answered (then ours). */
async function providerImage(output: ProviderImage, provider: string, { inputs, run }: ImageProduction): Promise<ImageBytes> {
	if (output instanceof ImageBytes) return output;
	const { signal, stopped, metrics } = run;
	try {
		return ImageBytes.owned(await inputs.fetchRemote(new URL(output.url), { field: 'output', maxBytes: inputs.maxInputImageBytes * 2, signal }));
	} catch (error) {
		// A download cut short by our own limit is a time-out, not a broken output.
		const failure = signal.aborted
			? stopped()
			: new ImageGenError(502, `The ${provider} provider's image could not be downloaded${error instanceof ImageGenError ? ` (${error.code})` : ''}`, {
					code: 'upstream_failed',
					cause: error,
				});
		if (failure.code !== 'cancelled') metrics.providerError(provider, failure.code);
		throw failure;
	}
}

/**
 * The provider's image brought to the request and marked; the copies before the marked one given
 * back. An image to be watermarked leaves the fit as pixels, which the marking encodes once.
 */
async function markedImage(source: ImageBytes, provider: string, production: ImageProduction): Promise<MarkedImage> {
	const { settled, run, records, provenance } = production;
	// Nothing is drawn for a mark nobody embeds (`--provenance off`) or records.
	const watermarked = records !== undefined && provenance !== UNMARKED;
	const fitted = () => normalizeOutput(source.bytes, settled, provider, run.imageWork, { signal: run.signal, asPixels: watermarked });
	let fit = await fitted();
	let marked = await mark(production, factsOf(fit, source, production, watermarked ? newProvenancePayload() : undefined));
	// A payload already naming a record (one draw in 2^64) is drawn again, and the image marked
	// again: fitted again first when the marking had its pixels.
	for (let draws = 1; marked.watermark && !(await recorded(marked, production)); draws++) {
		if (draws === 3) throw new Error('three provenance payloads drawn in a row were taken');
		if ('pixels' in fit) fit = await fitted();
		marked = await mark(production, factsOf(fit, source, production, newProvenancePayload()));
	}
	return { image: keptImage(source, 'bytes' in fit ? fit.bytes : undefined, marked.bytes), media: fit.media, provenance: marked.provenance };
}

/** What the marking is told of one image: the fit's bytes or pixels, the provider's own when they changed, the signed inputs. */
function factsOf(fit: FinishedImage, source: ImageBytes, { generation, signedInputs }: ImageProduction, watermark: Uint8Array | undefined): GeneratedImageFacts {
	const traits = { media: fit.media, model: generation.model, prompt: generation.prompt, inputs: signedInputs?.list(), ...(watermark && { watermark }) };
	const provided = { bytes: source.bytes, media: sniffMedia(source.bytes)!, changes: fit.changes };
	if ('pixels' in fit) return { ...traits, pixels: fit.pixels, source: provided };
	return { ...traits, bytes: fit.bytes, source: fit.bytes === source.bytes ? undefined : provided };
}

/** The record the watermark's payload names, written before the image goes anywhere; false when the payload was taken. */
async function recorded(marked: ProvenanceMarked, { records, generation, apiKeyId }: ImageProduction): Promise<boolean> {
	return records!.store.create({
		payload: marked.watermark!,
		generationId: records!.jobId,
		model: generation.model,
		apiKeyId,
		contentHash: createHash('sha256').update(marked.bytes).digest('hex'),
		prompt: generation.prompt,
		createdAt: new Date(),
	});
}

/**
 * The marked image, with its owner: the provider's bytes when neither the fit nor the marking
 * changed them, else a copy of ours. The fit's copy (none when the marking had its pixels) and the
 * provider's bytes, once read by the marking, are given back when they are not the one kept (the
 * provider's only if ours).
 */
function keptImage(source: ImageBytes, fitted: Buffer | undefined, marked: Buffer): ImageBytes {
	const read = fitted === undefined ? [source] : [ImageBytes.madeFrom(fitted, source), source];
	const kept = ImageBytes.madeFrom(marked, ...read);
	for (const bytes of new Set(read)) if (bytes !== kept) bytes.release();
	return kept;
}

/**
 * The image's entry in the answer: sent from memory, or stored and sent from memory or answered as
 * its URL. `seed` is absent when the host drew it without the request's.
 */
async function deliver({ image, media, provenance }: MarkedImage, seed: number | undefined, production: ImageProduction): Promise<AnsweredImage> {
	const { generation, hostedFiles } = production;
	const inline = generation.response_format === 'b64_json';
	const marks = { ...(seed === undefined ? {} : { seed }), provenance };
	// Nobody will replay this answer: the marked image goes out from memory, in pieces.
	if (inline && !production.keepsInlineImages) return { b64_json: new InlineBytes(image), ...marks };
	// An inline image is stored too (its job keeps it, and a replay sends it from storage in pieces):
	// neither the answer nor its records hold it whole. Its row is not synced on its own: the
	// usage line is made durable before the answer, and its sync of the same database covers this
	// row. An inline image's bytes are not synced at all (two fsyncs per answer): the answer goes
	// out from memory, and after a power cut a replay that finds them missing or short answers as
	// for an expired file, never a cut answer. A hosted one's are: its URL is the only way to them.
	const stored = await hostedFiles.putBuffer(image.bytes, media, production.apiKeyId, provenance, { durable: false, ...(inline ? { synced: false } : {}) });
	production.storedIds.push(stored.id);
	// The first answer goes out from the bytes at hand (no read back), replays and the job's from the file.
	if (inline) return { b64_json: new InlineFile(stored.id, new InlineBytes(image)), ...marks };
	image.release();
	return { url: hostedFiles.publicUrl(stored), expires_at: stored.expiresAt.toISOString(), ...marks };
}
