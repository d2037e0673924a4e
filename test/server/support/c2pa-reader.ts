/**
 * The C2PA reader of the Content Authenticity Initiative (c2pa-rs compiled to WebAssembly),
 * called directly: validation of claim, signature, actions and hash binding by the reference
 * implementation, not by anything of ours.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { initSync, WasmReader } from '@contentauth/c2pa-wasm';

let ready = false;

export interface C2paReport {
	validation_state: string;
	active_manifest?: string;
	manifests: Record<string, { assertions: { label: string; data: any }[]; ingredients?: any[]; signature_info?: any; claim_generator_info?: any[] }>;
	validation_status?: { code: string; explanation?: string }[];
	validation_results?: any;
}

/** The manifest store of `bytes`, validated against `trustAnchorPem` when given; null when there is none. */
export async function readC2paManifest(bytes: Buffer, mimeType: string, trustAnchorPem?: string): Promise<C2paReport | null> {
	if (!ready) {
		initSync({ module: readFileSync(require.resolve('@contentauth/c2pa-wasm/c2pa.wasm')) });
		ready = true;
	}
	const settings = trustAnchorPem ? { trust: { user_anchors: trustAnchorPem }, verify: { verify_trust: true } } : { verify: { verify_trust: false } };
	let reader: WasmReader;
	try {
		reader = await WasmReader.fromBytes(mimeType, new Uint8Array(bytes), JSON.stringify(settings));
	} catch (error) {
		if (/NotFound/.test(String(error))) return null;
		throw error;
	}
	try {
		return JSON.parse(reader.json()) as C2paReport;
	} finally {
		reader.free();
	}
}

export function activeManifest(report: C2paReport) {
	return report.manifests[report.active_manifest!]!;
}

export function actionsOf(report: C2paReport): any[] {
	const assertion = activeManifest(report).assertions.find((candidate) => candidate.label.startsWith('c2pa.actions'));
	return assertion?.data.actions ?? [];
}

/** The root of the certificate a service made for itself in `dataDir`: the anchor to validate its manifests against. */
export function ownTrustAnchor(dataDir: string): string {
	return readFileSync(join(dataDir, 'c2pa', 'signer-chain.pem'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.at(-1)!;
}
