/**
 * Whether an upload might carry a C2PA manifest store, found in bytes seen once as they stream
 * into storage: a byte search, so a filter only. It may say "maybe"; only c2pa-rs, parsing and
 * validating the store (verified-provenance.ts), may say "yes". Files without the pattern are
 * never read again for this.
 */

/**
 * A JUMBF description box typed as a C2PA manifest store: `jumd` and the store's UUID
 * (63327061-0011-0010-8000-00AA00389B71, "c2pa" first). Long needles are searched fastest.
 */
const C2PA_STORE_DESCRIPTION = Buffer.concat([Buffer.from('jumdc2pa', 'latin1'), Buffer.from('00110010800000aa00389b71', 'hex')]);
/** The needle cut in two by a chunk boundary is found in this much of both sides. */
const OVERLAP_BYTES = C2PA_STORE_DESCRIPTION.length - 1;

/**
 * Videos carry their marks in the boxes before the media data (C2PA places its store right after
 * `ftyp`); a gigabyte of frames is not searched for them.
 */
export const VIDEO_SCAN_BYTES = 16 * 1024 * 1024;

export class ProvenanceScan {
	private found = false;
	private tail = Buffer.alloc(0);
	private seen = 0;
	private limit = Number.POSITIVE_INFINITY;

	/** Searches no further than the first `bytes`. */
	limitTo(bytes: number): void {
		this.limit = bytes;
	}

	feed(chunk: Buffer): void {
		if (this.found || this.seen >= this.limit) return;
		this.seen += chunk.length;
		// Only the seam is copied: a store description cut by chunk boundaries is found there.
		const seam = Buffer.concat([this.tail, chunk.subarray(0, OVERLAP_BYTES)]);
		this.found = seam.includes(C2PA_STORE_DESCRIPTION) || chunk.includes(C2PA_STORE_DESCRIPTION);
		// A chunk shorter than the seam keeps what came before it in the tail.
		const last = chunk.length >= OVERLAP_BYTES ? chunk : seam;
		this.tail = Buffer.from(last.subarray(last.length - OVERLAP_BYTES));
	}

	/** The bytes fed hold what looks like a manifest store: worth reading with c2pa-rs. */
	mayCarryC2pa(): boolean {
		return this.found;
	}
}

/** Whether the bytes hold what looks like a C2PA manifest store. */
export function mayCarryC2pa(bytes: Buffer): boolean {
	return bytes.includes(C2PA_STORE_DESCRIPTION);
}
