/** The service's `provenance` of a file (docs/provenance.md), as the nodes put it in an item's JSON. */
import type { IDataObject } from 'n8n-workflow';
import type { Provenance } from '../../core/api';

/** Services that mark their files say so with each one; older ones do not, and nothing is added. */
export function provenanceJson(provenance: Provenance | undefined): IDataObject {
	return provenance ? { provenance: { c2pa: provenance.c2pa, digital_source_type: provenance.digital_source_type } } : {};
}
