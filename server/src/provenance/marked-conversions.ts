/**
 * Converted and fitted uploads with their provenance carried over (DESIGN.md, "Provenance"):
 * marked while the original is still at hand as a local file, and a fit into `max_bytes` made
 * again into the room the marks leave when they would push it over.
 */
import { readFile } from 'node:fs/promises';
import type { SniffedMedia } from '../../../core/media';
import sharp from '../media/sharp';
import { cannotFit, fitImage, type FitImageOptions, type FittedImage } from '../media/fit-image';
import type { ProvenanceSummary } from './digital-source';
import type { ImageChange, MarkedImage, ProvenanceMarker } from './provenance-marker';

export interface OriginalUpload {
	/** The original's bytes as a local file. */
	path: string;
	media: SniffedMedia;
	provenance?: ProvenanceSummary;
}

export interface ConvertedImage {
	bytes: Buffer;
	media: SniffedMedia;
	width: number;
	height: number;
}

export async function markConversion(marker: ProvenanceMarker, original: OriginalUpload, converted: ConvertedImage): Promise<MarkedImage> {
	const [bytes, metadata] = await Promise.all([readFile(original.path), sharp(original.path).metadata()]);
	// Orientations 5–8 turn the picture a quarter: its upright size has the sides swapped.
	const turned = (metadata.orientation ?? 1) >= 5;
	const [width, height] = turned ? [metadata.height, metadata.width] : [metadata.width, metadata.height];
	const changes: ImageChange[] = [];
	if (converted.media.type !== original.media.type) changes.push('converted');
	if (converted.width !== width || converted.height !== height) changes.push('resized');
	if (changes.length === 0) changes.push('transcoded');
	return marker.markConverted({
		bytes: converted.bytes,
		media: converted.media,
		changes,
		original: { bytes, media: original.media, provenance: original.provenance, exif: metadata.exif, xmp: metadata.xmp },
	});
}

/**
 * `fitImage`, then marks. Always re-encoded, even when the original already fits: the fit was
 * asked for, and what identifies a place or a device must not pass through it untouched.
 */
export async function fitAndMark(marker: ProvenanceMarker, original: OriginalUpload, fitOptions: FitImageOptions): Promise<{ fitted: FittedImage; marked: MarkedImage }> {
	const options = { ...fitOptions, alwaysReencode: true };
	const mark = async (fitted: FittedImage) => ({ fitted, marked: await markConversion(marker, original, { ...fitted, bytes: fitted.data }) });
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
