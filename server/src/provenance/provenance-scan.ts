/**
 * What an upload says about its own provenance, found in bytes seen once as they stream into
 * storage (never read again for this): whether they hold a C2PA manifest store, and the IPTC
 * digital source type their XMP names. Byte searches only, no parsing.
 */
import type { Provenance } from '../../../core/api';

/**
 * A JUMBF description box typed as a C2PA manifest store: `jumd` and the store's UUID
 * (63327061-0011-0010-8000-00AA00389B71, "c2pa" first). Long needles are searched fastest.
 */
const C2PA_STORE_DESCRIPTION = Buffer.concat([Buffer.from('jumdc2pa', 'latin1'), Buffer.from('00110010800000aa00389b71', 'hex')]);
const SOURCE_TYPE_KEY = Buffer.from('DigitalSourceType', 'latin1');
/** Attribute (`…DigitalSourceType="uri"`) or element (`…DigitalSourceType>uri<`) form. */
const SOURCE_TYPE_VALUE = /^DigitalSourceType\s*(?:=\s*["']|>)\s*([^"'<\s]{1,200})/;
/** Enough for the key, its value and the markup between them, on both sides of a chunk boundary. */
const OVERLAP_BYTES = 320;

/**
 * Videos carry their marks in the boxes before the media data (C2PA places its store right after
 * `ftyp`); a gigabyte of frames is not searched for them.
 */
export const VIDEO_SCAN_BYTES = 16 * 1024 * 1024;

export class ProvenanceScan {
	private hasC2pa = false;
	private digitalSourceType: string | null = null;
	private tail = Buffer.alloc(0);
	private seen = 0;
	private limit = Number.POSITIVE_INFINITY;

	/** Searches no further than the first `bytes`. */
	limitTo(bytes: number): void {
		this.limit = bytes;
	}

	feed(chunk: Buffer): void {
		if ((this.hasC2pa && this.digitalSourceType !== null) || this.seen >= this.limit) return;
		this.seen += chunk.length;
		// Only the seam is copied: a mark cut in two by a chunk boundary is found there.
		if (this.tail.length > 0) this.search(Buffer.concat([this.tail, chunk.subarray(0, OVERLAP_BYTES)]));
		this.search(chunk);
		this.tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - OVERLAP_BYTES)));
	}

	summary(): Provenance {
		return { c2pa: this.hasC2pa ? 'kept' : 'none', digital_source_type: this.digitalSourceType };
	}

	private search(bytes: Buffer): void {
		this.hasC2pa ||= bytes.includes(C2PA_STORE_DESCRIPTION);
		for (let at = bytes.indexOf(SOURCE_TYPE_KEY); this.digitalSourceType === null && at !== -1; at = bytes.indexOf(SOURCE_TYPE_KEY, at + 1)) {
			const value = SOURCE_TYPE_VALUE.exec(bytes.toString('latin1', at, at + OVERLAP_BYTES - 40));
			if (value) this.digitalSourceType = value[1]!;
		}
	}
}

export function scanProvenance(bytes: Buffer): Provenance {
	const scan = new ProvenanceScan();
	scan.feed(bytes);
	return scan.summary();
}

/** Whether the bytes hold a C2PA manifest store. */
export function carriesC2pa(bytes: Buffer): boolean {
	return bytes.includes(C2PA_STORE_DESCRIPTION);
}
