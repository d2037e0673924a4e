/**
 * The byte search that decides whether an upload is worth reading with c2pa-rs: a manifest
 * store's description is found wherever chunk boundaries cut it, and nowhere else.
 */
import { mayCarryC2pa, ProvenanceScan } from '../../../server/src/provenance/provenance-scan';
import { patterned } from '../support/media';

const DESCRIPTION = Buffer.concat([Buffer.from('jumdc2pa', 'latin1'), Buffer.from('00110010800000aa00389b71', 'hex')]);

function scanned(bytes: Buffer, cuts: number[], limit?: number): boolean {
	const scan = new ProvenanceScan();
	if (limit !== undefined) scan.limitTo(limit);
	let from = 0;
	for (const cut of [...cuts, bytes.length]) {
		scan.feed(bytes.subarray(from, cut));
		from = cut;
	}
	return scan.mayCarryC2pa();
}

it('finds the description whichever byte of it a chunk boundary falls on', () => {
	const bytes = Buffer.concat([patterned(1000), DESCRIPTION, patterned(1000, 3)]);
	for (let offset = 0; offset <= DESCRIPTION.length; offset++) expect(scanned(bytes, [1000 + offset])).toBe(true);
	// Cut in three, with a one-byte chunk in the middle.
	expect(scanned(bytes, [1005, 1006])).toBe(true);
	expect(mayCarryC2pa(bytes)).toBe(true);
});

it('does not take a partial description, or one split across distant places, for one', () => {
	const partial = Buffer.concat([patterned(500), DESCRIPTION.subarray(0, DESCRIPTION.length - 1), patterned(500, 3)]);
	expect(scanned(partial, [250, 510])).toBe(false);
	const split = Buffer.concat([DESCRIPTION.subarray(0, 10), patterned(400), DESCRIPTION.subarray(10)]);
	expect(scanned(split, [10, 410])).toBe(false);
	expect(mayCarryC2pa(split)).toBe(false);
});

it('searches no further than its limit', () => {
	const bytes = Buffer.concat([patterned(4096), DESCRIPTION]);
	expect(scanned(bytes, [1024, 2048, 3072, 4096], 4096)).toBe(false);
	expect(scanned(bytes, [1024, 2048, 3072, 4096], 4097)).toBe(true);
});
