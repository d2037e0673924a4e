/**
 * The C2PA layer of an image being checked (POST /v1/provenance/verify): whether it carries a
 * manifest store, whether c2pa-rs validates it, who signed it and the digital source type it
 * states. The same rules as for uploads (verified-provenance.ts): a source type only from a store
 * that validates; the signer is named as its certificate names itself, not judged against a trust
 * list.
 */
import { readManifestStore, type StoredManifest } from './c2pa-engine';
import { mayCarryC2pa } from './provenance-scan';
import { digitalSourceTypeOf, isValid } from './verified-provenance';

export interface C2paLayer {
	/** A manifest store is there: c2pa-rs parsed one, or its description is in the bytes (a damaged one). */
	present: boolean;
	/** c2pa-rs validated it: claim, signature and hash binding intact. */
	valid: boolean;
	/** The signing certificate's common name (else its issuer), as the manifest states it. */
	signer: string | null;
	digital_source_type: string | null;
}

const ABSENT: C2paLayer = { present: false, valid: false, signer: null, digital_source_type: null };

/** c2pa-rs's report of a manifest's signature (`Reader::json`), the parts we read. */
interface SignedManifest extends StoredManifest {
	signature_info?: { common_name?: string; issuer?: string };
}

let previous: Promise<unknown> = Promise.resolve();

/**
 * Read one image at a time: c2pa-rs takes the whole file into its WebAssembly memory, which never
 * shrinks again, so images read at once would each grow it. Bytes without a store's description
 * are answered without c2pa-rs.
 */
export function readC2paLayer(bytes: Buffer, mimeType: string): Promise<C2paLayer> {
	if (!mayCarryC2pa(bytes)) return Promise.resolve(ABSENT);
	const reading = previous.then(() => layerOf(bytes, mimeType));
	previous = reading.catch(() => undefined);
	return reading;
}

async function layerOf(bytes: Buffer, mimeType: string): Promise<C2paLayer> {
	const store = await readManifestStore(bytes, mimeType);
	const active = store?.active_manifest;
	if (!store || active === undefined) return { ...ABSENT, present: true };
	const signature = (store.manifests[active] as SignedManifest | undefined)?.signature_info;
	const valid = isValid(store);
	return {
		present: true,
		valid,
		signer: signature?.common_name ?? signature?.issuer ?? null,
		digital_source_type: valid ? digitalSourceTypeOf(store, active) : null,
	};
}
