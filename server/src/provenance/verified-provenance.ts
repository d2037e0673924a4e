/**
 * What an image's own C2PA manifest says, believed only once c2pa-rs has parsed and validated it
 * (docs/provenance.md, "What is verified before it is signed"). A byte search may say a file might
 * carry a manifest (provenance-scan.ts); only this says it does. XMP and IPTC are never read
 * here: anyone can write them.
 */
import { NO_PROVENANCE, type Provenance } from '../../../core/api';
import { readManifestStore, type ManifestStoreReport, type StoredIngredient, type StoredManifest } from './c2pa-engine';

/**
 * c2pa-rs reads the whole file into its WebAssembly memory, which never shrinks again, and
 * validating hashes all of it, in time that grows with its size: files larger than this are not
 * read, and answered as carrying no manifest. The same bound as a provider's image.
 */
const VERIFY_MAX_BYTES = 64 * 1024 * 1024;

/** A parent's parent's… manifest: a chain longer than this is not followed for the source type. */
const MAX_PARENTS = 16;

let previous: Promise<unknown> = Promise.resolve();

/**
 * `kept` and the digital source type the manifest names, when c2pa-rs finds a manifest store
 * that validates; otherwise nothing.
 */
export function verifiedProvenance(bytes: Buffer, mimeType: string): Promise<Provenance> {
	return verifiedProvenanceOf({ size: bytes.length, mimeType, read: async () => bytes });
}

/**
 * The same for a file `read` fetches only when its turn comes: one file at a time, so neither the
 * engine's memory nor ours holds more than the largest file read, whatever the number waiting.
 */
export function verifiedProvenanceOf(file: { size: number; mimeType: string; read: () => Promise<Buffer> }): Promise<Provenance> {
	if (file.size > VERIFY_MAX_BYTES) return Promise.resolve(NO_PROVENANCE);
	const reading = previous.then(async () => readVerified(await file.read(), file.mimeType));
	previous = reading.catch(() => undefined);
	return reading;
}

async function readVerified(bytes: Buffer, mimeType: string): Promise<Provenance> {
	const store = await readManifestStore(bytes, mimeType);
	if (!store || !isValid(store) || store.active_manifest === undefined) return NO_PROVENANCE;
	return { c2pa: 'kept', digital_source_type: digitalSourceTypeOf(store, store.active_manifest) };
}

/** Claims, signatures and the hash binding intact; `Trusted` also names a trusted signer. */
export function isValid(store: ManifestStoreReport): boolean {
	return store.validation_state === 'Valid' || store.validation_state === 'Trusted';
}

/**
 * The first `digitalSourceType` of the manifest's actions, else of its parent's manifest (a
 * conversion records `c2pa.opened`, its parent `c2pa.created` with the source type), followed
 * only through parents that validated when they were taken in and show no failure now.
 */
export function digitalSourceTypeOf(store: ManifestStoreReport, activeLabel: string): string | null {
	const ingredientsFailed = (store.validation_results?.ingredientDeltas ?? []).some((delta) => (delta.validationDeltas?.failure ?? []).length > 0);
	let label: string | undefined = activeLabel;
	for (let depth = 0; label !== undefined && depth <= MAX_PARENTS; depth++) {
		const manifest: StoredManifest | undefined = store.manifests[label];
		if (!manifest) return null;
		const found = actionSourceType(manifest);
		if (found) return found;
		if (ingredientsFailed) return null;
		const parent: StoredIngredient | undefined = manifest.ingredients?.find((ingredient) => ingredient.relationship === 'parentOf');
		label = parent && validatedIngredient(parent) ? parent.active_manifest : undefined;
	}
	return null;
}

function actionSourceType(manifest: StoredManifest): string | null {
	for (const assertion of manifest.assertions ?? []) {
		if (!assertion.label.startsWith('c2pa.actions')) continue;
		const actions = (assertion.data as { actions?: { digitalSourceType?: unknown }[] } | undefined)?.actions ?? [];
		const withType = actions.find((action) => typeof action.digitalSourceType === 'string');
		if (withType) return withType.digitalSourceType as string;
	}
	return null;
}

/** Validation results recorded for the ingredient, and no failure among them. */
function validatedIngredient(ingredient: StoredIngredient): boolean {
	const recorded = ingredient.validation_results?.activeManifest;
	return recorded !== undefined && (recorded.failure ?? []).length === 0;
}
