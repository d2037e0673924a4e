/**
 * c2pa-rs (the reference C2PA implementation) compiled to WebAssembly, as the Content Authenticity
 * Initiative ships it on npm: no binary to download at install, and the same code that verifiers
 * run. Compiled once per process, in the background, the first time something asks for it.
 */
import { readFileSync } from 'node:fs';
import { initSync, WasmBuilder, WasmReader } from '@contentauth/c2pa-wasm';
import type { CoseSigner } from './cose-signer';

/** The global of every JavaScript runtime; Node's type declarations leave it out. */
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<object> };

let loading: Promise<void> | undefined;

/** Compiling 9 MB of WebAssembly takes a tenth of a second: off the event loop, once. */
export function loadC2pa(): Promise<void> {
	loading ??= WebAssembly.compile(readFileSync(require.resolve('@contentauth/c2pa-wasm/c2pa.wasm'))).then((module) => {
		provideFileReaderSync();
		initSync({ module });
	});
	return loading;
}

/** The manifest definition (c2pa-rs `ManifestDefinition`, JSON) and what goes into it. */
export interface SigningJob {
	manifest: object;
	mimeType: string;
	bytes: Buffer;
	/** An image whose own manifest becomes the parent ingredient of ours. */
	parent?: { bytes: Buffer; mimeType: string; ingredient: object };
}

/** Our own manifests are checked by our tests, not after every signature. */
const SIGNING_SETTINGS = JSON.stringify({ verify: { verify_after_sign: false, verify_trust: false } });

export async function signWithC2pa(job: SigningJob, signer: CoseSigner): Promise<Buffer> {
	await loadC2pa();
	const builder = WasmBuilder.fromJson(JSON.stringify(job.manifest), SIGNING_SETTINGS);
	try {
		if (job.parent) await builder.addIngredientFromBlob(JSON.stringify(job.parent.ingredient), job.parent.mimeType, asBlob(job.parent.bytes));
		const definition = { alg: signer.algorithm.c2pa, reserveSize: signer.reserveSize, sign: async (claim: Uint8Array) => signer.signClaim(claim) };
		const signed = await builder.sign(definition as never, [], job.mimeType, asBlob(job.bytes));
		return Buffer.from(signed.buffer, signed.byteOffset, signed.byteLength);
	} finally {
		builder.free();
	}
}

export interface ManifestReport {
	/** c2pa-rs's verdict: Invalid, Valid or Trusted. */
	state: string;
	activeManifest: Record<string, unknown> | null;
	store: Record<string, unknown>;
}

/** Reads and validates the manifest store of `bytes`; null when there is none. */
export async function readC2pa(bytes: Uint8Array, mimeType: string, trustAnchorsPem?: string): Promise<ManifestReport | null> {
	await loadC2pa();
	const settings = JSON.stringify(trustAnchorsPem ? { trust: { user_anchors: trustAnchorsPem }, verify: { verify_trust: true } } : { verify: { verify_trust: false } });
	let reader: WasmReader;
	try {
		reader = await WasmReader.fromBytes(mimeType, bytes, settings);
	} catch (error) {
		if (/JumbfNotFound|ManifestNotFound|NotFound/i.test(String(error))) return null;
		throw error;
	}
	try {
		const store = JSON.parse(reader.json()) as Record<string, unknown>;
		return { state: String(store.validation_state ?? ''), activeManifest: (reader.activeManifest() as Record<string, unknown> | undefined) ?? null, store };
	} finally {
		reader.free();
	}
}

/**
 * The bytes as the WASM build reads a browser Blob: it asks only for `size`, `slice` and a
 * FileReaderSync to read a slice, which Node lacks. Nothing is copied until a slice is read.
 */
class BytesBlob {
	constructor(readonly bytes: Uint8Array) {}

	get size(): number {
		return this.bytes.length;
	}

	slice(start?: number, end?: number): BytesBlob {
		return new BytesBlob(this.bytes.subarray(start, end));
	}
}

function asBlob(bytes: Buffer): Blob {
	return new BytesBlob(bytes) as unknown as Blob;
}

function provideFileReaderSync(): void {
	const global = globalThis as { FileReaderSync?: unknown };
	global.FileReaderSync ??= class {
		readAsArrayBuffer(blob: BytesBlob): ArrayBuffer {
			const { bytes } = blob;
			return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
		}
	};
}
