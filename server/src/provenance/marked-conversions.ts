/**
 * Converted and fitted uploads with their provenance carried over (docs/provenance.md):
 * marked while the original is still at hand as a local file (its own manifest read by c2pa-rs
 * once, when a byte search says it may carry one), and a fit into `max_bytes` made again into
 * the room the marks leave when they would push it over.
 */
import { readFile } from 'node:fs/promises';
import type { SniffedMedia } from '../../../core/media';
import sharp from '../media/sharp';
import { cannotFit, fitImage, type FitImageOptions, type FittedImage } from '../media/fit-image';
import { NO_PROVENANCE } from '../../../core/api';
import type { ConvertedUploadFacts, ImageChange, MarkedImage, ProvenanceMarker } from './provenance-marker';
import { verifiedProvenance } from './verified-provenance';

interface OriginalUpload {
	/** The original's bytes as a local file. */
	path: string;
	media: SniffedMedia;
	/** A byte search found what looks like a manifest store: c2pa-rs reads it (verified-provenance.ts). */
	mayCarryC2pa?: boolean;
}

interface ConvertedImage {
	bytes: Buffer;
	media: SniffedMedia;
	width: number;
	height: number;
}

/** The original as marking needs it, read once however often it is marked. */
interface ReadOriginal {
	facts: ConvertedUploadFacts['original'];
	/** Upright, as a viewer shows it. */
	width?: number;
	height?: number;
}

async function readOriginal(original: OriginalUpload): Promise<ReadOriginal> {
	const [bytes, metadata] = await Promise.all([readFile(original.path), sharp(original.path).metadata()]);
	const provenance = original.mayCarryC2pa ? await verifiedProvenance(bytes, original.media.mimeType) : NO_PROVENANCE;
	// Orientations 5–8 turn the picture a quarter: its upright size has the sides swapped.
	const turned = (metadata.orientation ?? 1) >= 5;
	const [width, height] = turned ? [metadata.height, metadata.width] : [metadata.width, metadata.height];
	return { facts: { bytes, media: original.media, provenance, exif: metadata.exif, xmp: metadata.xmp }, width, height };
}

function markRead(marker: ProvenanceMarker, original: ReadOriginal, converted: ConvertedImage): Promise<MarkedImage> {
	const changes: ImageChange[] = [];
	if (converted.media.type !== original.facts.media.type) changes.push('converted');
	if (converted.width !== original.width || converted.height !== original.height) changes.push('resized');
	if (changes.length === 0) changes.push('transcoded');
	return marker.markConverted({ bytes: converted.bytes, media: converted.media, changes, original: original.facts });
}

export async function markConversion(marker: ProvenanceMarker, original: OriginalUpload, converted: ConvertedImage): Promise<MarkedImage> {
	return markRead(marker, await readOriginal(original), converted);
}

/**
 * `fitImage`, then marks. Always re-encoded, even when the original already fits: the fit was
 * asked for, and what identifies a place or a device must not pass through it untouched.
 */
export async function fitAndMark(marker: ProvenanceMarker, original: OriginalUpload, fitOptions: FitImageOptions): Promise<{ fitted: FittedImage; marked: MarkedImage }> {
	const options = { ...fitOptions, alwaysReencode: true };
	const read = await readOriginal(original);
	const mark = async (fitted: FittedImage) => ({ fitted, marked: await markRead(marker, read, { ...fitted, bytes: fitted.data }) });
	const first = await fitImage(original.path, options);
	const result = await mark(first);
	const { maxBytes } = options;
	if (maxBytes === undefined || result.marked.bytes.length <= maxBytes) return result;
	const marks = result.marked.bytes.length - first.data.length;
	if (marks >= maxBytes) throw cannotFit(options, `${marks} bytes for the provenance marks alone`);
	const again = await mark(await fitImage(original.path, { ...options, maxBytes: maxBytes - marks }));
	if (again.marked.bytes.length > maxBytes) throw cannotFit(options, `${again.marked.bytes.length} bytes with the provenance marks`);
	return again;
}
