import type { Provenance } from '../../../core/api';

/** What the answers say about a hosted or inlined image's provenance (docs/provenance.md). */

/** IPTC's term for media made by a trained model, written into both marks. */
export const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

export type { Provenance as ProvenanceSummary } from '../../../core/api';

export const NO_PROVENANCE: Provenance = { c2pa: 'none', digital_source_type: null };
