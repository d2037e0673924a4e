/**
 * Reading the mark: the image averaged onto its grid (or, when its proportions round near a tie,
 * each of the two grids it may have had), the code bits read, decoded, and the payload's check
 * tested. Only a payload whose CRC-32 matches is "found".
 */
import { readCoefficients } from './block-coefficients';
import { gridsForDetection } from './canonical-grid';
import { lumaOnGrid } from './grid-sampling';
import { CODE_BITS, decodePayload } from './payload-code';
import { checkRawImage, type RawImage } from './raw-image';
import { readCodeBits, spreadingFor } from './spreading';

/** The name the mark goes by (a C2PA soft binding's `alg`, the verify answer's `algorithm`). */
export const WATERMARK_ALGORITHM = 'imagegen.dct-spread-spectrum.1';

export type WatermarkReading =
	| {
			found: true;
			algorithm: typeof WATERMARK_ALGORITHM;
			payload: Uint8Array;
			/** The share of code bits read as they were written: 1 untouched, lower after lossy changes (0.5 is chance). */
			confidence: number;
	  }
	| {
			found: false;
			/** `too_small`: the image has fewer pixels than the grid the mark lives on, so it cannot carry one. */
			reason: 'not_found' | 'too_small';
	  };

/**
 * Whether `pixels` carry a mark, and its payload. An image too small or too narrow to have carried
 * one is `found: false` with `reason: 'too_small'`, not an error; pixels that are not a raw image
 * (a data length that does not match its info) throw a RangeError naming the field.
 */
export function detectWatermark(pixels: RawImage): WatermarkReading {
	checkRawImage(pixels);
	const grids = gridsForDetection(pixels.info.width, pixels.info.height);
	if (grids.length === 0) return { found: false, reason: 'too_small' };
	for (const grid of grids) {
		const readings = readCodeBits(readCoefficients(lumaOnGrid(pixels, grid), grid), spreadingFor(grid, CODE_BITS));
		const decoded = decodePayload(readings);
		if (decoded !== undefined) return { found: true, algorithm: WATERMARK_ALGORITHM, payload: decoded.payload, confidence: decoded.bitAgreement };
	}
	return { found: false, reason: 'not_found' };
}
