/**
 * Marks images right before they are stored or inlined (docs/provenance.md): an XMP packet
 * with the IPTC digital source type, then a C2PA manifest signed with the operator's certificate
 * whose hash binding covers those XMP bytes too. An image that came with its own manifest keeps
 * it as the parent ingredient of ours; input images that came with theirs are ingredients too.
 */
import type { SniffedMedia } from '../../../core/media';
import { ImageBytes } from '../media/image-bytes';
import { signWithC2pa, type SigningIngredient } from './c2pa-engine';
import type { CoseSigner } from './cose-signer';
import { NO_PROVENANCE, TRAINED_ALGORITHMIC_MEDIA, type Provenance } from '../../../core/api';
import { embedXmp } from './embed-xmp';
import { keptCredits } from './kept-credits';
import { mayCarryC2pa } from './provenance-scan';
import { signVideo } from './sign-video';
import { verifiedProvenance } from './verified-provenance';
import { WATERMARK_ALGORITHM } from './watermark/detect';
import type { RawImage } from './watermark/raw-image';
import { watermarkedImage } from './watermark-image';
import { xmpPacket } from './xmp-packet';

/** What was done to an image between its source and what we store. */
export type ImageChange = 'converted' | 'resized' | 'transcoded' | 'watermarked';

/** What every generated image is marked with, whatever form it comes in. */
interface GeneratedImageTraits {
	media: SniffedMedia;
	model: string;
	prompt: string;
	/** The provider's own bytes and what we changed, when they were re-encoded into `bytes`. */
	source?: { bytes: Buffer; media: SniffedMedia; changes: ImageChange[] };
	/** The payload the pixels are to carry as an invisible watermark (a provenance record's); none without it. */
	watermark?: Uint8Array;
	/** The input images the model was given that came with their own C2PA manifest: each an ingredient of ours. */
	inputs?: readonly SignedInput[];
}

/**
 * A generated image: encoded in `media`'s format, or the pixels the provider's image was fitted to,
 * not yet encoded (generation/normalize-output.ts). Pixels are the marking's own: marked in place,
 * encoded in `media`'s format and given back (or handed to the marking's thread, not copied).
 */
export type GeneratedImageFacts = GeneratedImageTraits & ({ bytes: Buffer } | { pixels: RawImage; source: NonNullable<GeneratedImageTraits['source']> });

/** `images[index]` of a request, as the host was given it, carrying a manifest of its own. */
export interface SignedInput {
	index: number;
	bytes: Buffer;
	media: SniffedMedia;
}

/** An upload re-encoded for `output_format`, `max_side` or `max_bytes` (metadata already dropped). */
export interface ConvertedUploadFacts {
	bytes: Buffer;
	media: SniffedMedia;
	changes: ImageChange[];
	original: {
		bytes: Buffer;
		media: SniffedMedia;
		/** What the original's own manifest says, validated by c2pa-rs (verified-provenance.ts); nothing else is believed. */
		provenance?: Provenance;
		/** The original's EXIF and XMP blocks, for the credits that survive the conversion. */
		exif?: Buffer;
		xmp?: Buffer;
	};
}

/** What marking a generated image reads: the image, its source when that becomes the parent ingredient, and its signed inputs. */
export function generatedBytesRead(image: GeneratedImageFacts): number {
	const inputs = (image.inputs ?? []).reduce((sum, input) => sum + input.bytes.byteLength, 0);
	const drawn = 'pixels' in image ? image.pixels.data.byteLength : image.bytes.byteLength;
	return drawn + (image.source?.bytes.byteLength ?? 0) + inputs;
}

/** What marking a converted upload reads: the upload, and its original (always the parent ingredient). */
export function convertedBytesRead(upload: ConvertedUploadFacts): number {
	return upload.bytes.byteLength + upload.original.bytes.byteLength;
}

export interface MarkedImage {
	bytes: Buffer;
	provenance: Provenance;
	/** The payload the pixels carry as a watermark, when one was embedded. */
	watermark?: Uint8Array;
}

/** A generated MP4 on local disk, and where its signed copy is to be written. */
export interface VideoMarkingJob {
	/** The MP4 as the provider delivered it. */
	input: string;
	/** Where the signed MP4 goes; nothing is written there when the video is not marked. */
	output: string;
	model: string;
	generationId: string;
	/** The image the video starts from: with its own C2PA manifest, an ingredient of ours. */
	firstFrame?: { bytes: Buffer; mimeType: string };
}

/** Marked: host `output`. Not marked: host `input` as it is (`reason` says why, when there is one). */
export interface MarkedVideo {
	marked: boolean;
	provenance?: Provenance;
	reason?: string;
}

export interface ProvenanceMarker {
	markGenerated(image: GeneratedImageFacts): Promise<MarkedImage>;
	markConverted(upload: ConvertedUploadFacts): Promise<MarkedImage>;
	/** Signs off the service's event loop; rejects with the signal's reason once it aborts. */
	markVideo(job: VideoMarkingJob, signal?: AbortSignal): Promise<MarkedVideo>;
}

/** `--provenance off`: bytes as they are; a provider's own manifest still reported once it validates. */
export const UNMARKED: ProvenanceMarker = {
	async markGenerated(image) {
		// Pixels are encoded as they are: bytes we just made carry no manifest.
		if ('pixels' in image) return { bytes: (await watermarkedImage(image.pixels, image.media, undefined)).image.bytes, provenance: NO_PROVENANCE };
		return { bytes: image.bytes, provenance: mayCarryC2pa(image.bytes) ? await verifiedProvenance(image.bytes, image.media.mimeType) : NO_PROVENANCE };
	},
	async markConverted(upload) {
		return { bytes: upload.bytes, provenance: NO_PROVENANCE };
	},
	async markVideo() {
		return { marked: false };
	},
};

interface MarkerOptions {
	signer: CoseSigner;
	includePrompt: boolean;
	/** `imagegen-server <version>`. */
	creatorTool: string;
}

const PARENT_ID = 'source-image';

export class C2paProvenanceMarker implements ProvenanceMarker {
	constructor(private readonly options: MarkerOptions) {}

	async markGenerated(image: GeneratedImageFacts): Promise<MarkedImage> {
		const { signer, includePrompt, creatorTool } = this.options;
		const xmp = xmpPacket({
			digitalSourceType: TRAINED_ALGORITHMIC_MEDIA,
			creatorTool,
			model: image.model,
			createdAt: new Date(),
			prompt: includePrompt ? image.prompt : undefined,
		});
		// The watermark goes into the pixels first: the XMP and the manifest's hash then cover them.
		const { image: drawn, watermarked } = await watermarkedImage('pixels' in image ? image.pixels : image.bytes, image.media, image.watermark);
		const marked = withOwnXmp(drawn.bytes, image.media, xmp);
		const source = 'pixels' in image ? image.source : (image.source ?? { bytes: image.bytes, media: image.media, changes: [] });
		const agent = { name: image.model };
		const done: ImageChange[] = watermarked ? [...source.changes, 'watermarked'] : source.changes;
		const changes = done.map((change) => ({ action: `c2pa.${change}`, softwareAgent: { name: creatorTool } }));
		const signedSource = mayCarryC2pa(source.bytes);
		const inputs = (image.inputs ?? []).map(inputIngredient);
		const actions = signedSource ? [opened(agent), ...changes] : [created(agent, inputs), ...changes];
		const softBinding = watermarked && image.watermark ? [watermarkBinding(image.watermark)] : [];
		const bytes = await signWithC2pa(
			{
				manifest: this.manifest(image.media, actions, softBinding),
				mimeType: image.media.mimeType,
				bytes: marked.bytes,
				ingredients: signedSource ? [parent(source.bytes, source.media, image.model), ...inputs] : inputs,
			},
			signer,
		).finally(() => {
			marked.release();
			drawn.release();
		});
		return { bytes, provenance: { c2pa: 'signed', digital_source_type: TRAINED_ALGORITHMIC_MEDIA }, ...(softBinding.length > 0 && image.watermark ? { watermark: image.watermark } : {}) };
	}

	/**
	 * Our manifest with the original as parent ingredient (its own manifest, if any, inside it) and
	 * the conversion recorded: it asserts nothing about where the picture came from, and the answer
	 * names a digital source type only from the original's validated manifest. The XMP carries the
	 * original's own words on, as they were: its digital source type (the validated one first),
	 * creator and copyright. Nothing else of the original's metadata comes along.
	 */
	async markConverted(upload: ConvertedUploadFacts): Promise<MarkedImage> {
		const { original } = upload;
		const verifiedSourceType = original.provenance?.digital_source_type ?? null;
		const { digitalSourceType, ...credits } = keptCredits(original.exif, original.xmp);
		const xmp = xmpPacket({ digitalSourceType: verifiedSourceType ?? digitalSourceType, ...credits });
		const agent = { name: this.options.creatorTool };
		const actions = [opened(agent), ...upload.changes.map((change) => ({ action: `c2pa.${change}`, softwareAgent: agent }))];
		const withXmp = withOwnXmp(upload.bytes, upload.media, xmp);
		const bytes = await signWithC2pa(
			{
				manifest: this.manifest(upload.media, actions),
				mimeType: upload.media.mimeType,
				bytes: withXmp.bytes,
				ingredients: [parent(original.bytes, original.media, 'original')],
			},
			this.options.signer,
		).finally(() => withXmp.release());
		return { bytes, provenance: { c2pa: 'signed', digital_source_type: verifiedSourceType } };
	}

	/** In this thread: the marking pool (marking-pool.ts) calls this from its workers. */
	markVideo(job: VideoMarkingJob, signal?: AbortSignal): Promise<MarkedVideo> {
		return signVideo(job, { signer: this.options.signer, creatorTool: this.options.creatorTool }, signal);
	}

	/** A c2pa-rs manifest definition with one actions assertion, and `more` after it. */
	private manifest(media: SniffedMedia, actions: object[], more: object[] = []): object {
		return {
			claim_generator_info: [{ name: 'imagegen-server', version: this.options.creatorTool.split(' ')[1] }],
			title: `image.${media.extension}`,
			format: media.mimeType,
			assertions: [{ label: 'c2pa.actions.v2', data: { actions } }, ...more],
		};
	}
}

/**
 * The image with its XMP packet: our own copy, read by the signer and then no longer needed; or the
 * input itself, for a format that takes no packet, which stays its owner's.
 */
function withOwnXmp(input: Buffer, media: SniffedMedia, xmp: string): ImageBytes {
	return ImageBytes.madeFrom(embedXmp(input, media, xmp), ImageBytes.lent(input));
}

/**
 * C2PA's soft binding: the watermark's algorithm and the payload it carries (base64), over the whole
 * image (an empty scope), tying the pixels' mark to this manifest.
 */
function watermarkBinding(payload: Uint8Array): object {
	return { label: 'c2pa.soft-binding', data: { alg: WATERMARK_ALGORITHM, blocks: [{ scope: {}, value: Buffer.from(payload).toString('base64') }], pad: [] } };
}

function opened(softwareAgent: { name: string }): object {
	return { action: 'c2pa.opened', softwareAgent, parameters: { ingredientIds: [PARENT_ID] } };
}

/** Made by the model, from the inputs it was given that carry a manifest (none named when none does). */
function created(softwareAgent: { name: string }, inputs: readonly SigningIngredient[]): object {
	const ingredientIds = inputs.map(({ ingredient }) => (ingredient as { label: string }).label);
	return { action: 'c2pa.created', digitalSourceType: TRAINED_ALGORITHMIC_MEDIA, softwareAgent, ...(ingredientIds.length > 0 ? { parameters: { ingredientIds } } : {}) };
}

function parent(bytes: Buffer, media: SniffedMedia, name: string): SigningIngredient {
	return { bytes, mimeType: media.mimeType, ingredient: { title: `${name}.${media.extension}`, relationship: 'parentOf', label: PARENT_ID } };
}

/**
 * An input image: C2PA's relationship for what a generative model was given (`inputTo`), not an
 * edit of it (`parentOf`) nor a part of it (`componentOf`); as the first frame of a video is.
 */
function inputIngredient({ index, bytes, media }: SignedInput): SigningIngredient {
	return { bytes, mimeType: media.mimeType, ingredient: { title: `images[${index}].${media.extension}`, relationship: 'inputTo', label: `input-image-${index}` } };
}
