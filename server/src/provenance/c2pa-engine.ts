/**
 * c2pa-rs (the reference C2PA implementation) compiled to WebAssembly, as the Content Authenticity
 * Initiative ships it on npm: no binary to download at install, and the same code that verifiers
 * run. Compiled once per process, the first time an image is signed or read.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { initSync, WasmBuilder, WasmReader } from '@contentauth/c2pa-wasm';
import type { CoseSigner } from './cose-signer';
import { FileBlob, type ReadableBlob } from './file-blob';

/** The global of every JavaScript runtime; Node's type declarations leave it out. */
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<object> };

let loading: Promise<void> | undefined;

/** Compiling 9 MB of WebAssembly would stall every request: off the event loop, once. */
function loadC2pa(): Promise<void> {
	loading ??= WebAssembly.compile(readFileSync(require.resolve('@contentauth/c2pa-wasm/c2pa.wasm'))).then((module) => {
		provideFileReaderSync();
		initSync({ module });
	});
	return loading;
}

/** An asset whose own manifest becomes an ingredient of ours: `ingredient` names it, its relationship and its label. */
export interface SigningIngredient {
	bytes: Buffer;
	mimeType: string;
	ingredient: object;
}

/** The manifest definition (c2pa-rs `ManifestDefinition`, JSON) and what goes into it. */
export interface SigningJob {
	manifest: object;
	mimeType: string;
	bytes: Buffer;
	/** In the order the manifest's actions name them. */
	ingredients?: readonly SigningIngredient[];
}

/** Our own manifests are checked by our tests, not after every signature. */
const SIGNING_SETTINGS = JSON.stringify({ verify: { verify_after_sign: false, verify_trust: false } });

export async function signWithC2pa(job: SigningJob, signer: CoseSigner): Promise<Buffer> {
	const signed = await signBlob(job, signer, asBlob(job.bytes));
	return Buffer.from(signed.buffer, signed.byteOffset, signed.byteLength);
}

/** A file to sign where it lies on disk, and where its signed copy goes. */
export interface FileSigningJob extends Omit<SigningJob, 'bytes'> {
	input: string;
	output: string;
}

/**
 * Signs the file at `input` into `output`. The engine reads its source through the file (nothing
 * of it is kept on the JavaScript side), but c2pa-rs takes the whole source in and answers the
 * whole signed asset as one array: the caller bounds the size it signs.
 */
export async function signFileWithC2pa(job: FileSigningJob, signer: CoseSigner): Promise<void> {
	const source = FileBlob.open(job.input);
	let signed: Uint8Array;
	try {
		signed = await signBlob(job, signer, source as unknown as Blob);
	} finally {
		source.close();
	}
	await writeFile(job.output, signed);
}

async function signBlob(job: Omit<SigningJob, 'bytes'>, signer: CoseSigner, source: Blob): Promise<Uint8Array> {
	await loadC2pa();
	const builder = WasmBuilder.fromJson(JSON.stringify(job.manifest), SIGNING_SETTINGS);
	try {
		for (const ingredient of job.ingredients ?? []) await addIngredient(builder, ingredient);
		const definition = { alg: signer.algorithm.c2pa, reserveSize: signer.reserveSize, sign: async (claim: Uint8Array) => signer.signClaim(claim) };
		return await builder.sign(definition as never, [], job.mimeType, source);
	} finally {
		builder.free();
	}
}

/** A manifest store as c2pa-rs reports it (`Reader::json`), the parts we read. */
export interface ManifestStoreReport {
	/** `Valid` (claims, signatures and hash bindings intact) or `Trusted` (and a trusted signer), else `Invalid`. */
	validation_state: string;
	active_manifest?: string;
	manifests: Record<string, StoredManifest>;
	validation_results?: { ingredientDeltas?: { validationDeltas?: ValidationCodes }[] };
}

export interface StoredManifest {
	assertions?: { label: string; data?: unknown }[];
	ingredients?: StoredIngredient[];
}

export interface StoredIngredient {
	relationship?: string;
	/** The label of the ingredient's own manifest in the store. */
	active_manifest?: string;
	/** How the ingredient's manifest validated when it was taken in, as its taker recorded it. */
	validation_results?: { activeManifest?: ValidationCodes };
}

interface ValidationCodes {
	failure?: unknown[];
}

/** No trust list is configured: a signature is checked, whoever made it. */
const READING_SETTINGS = JSON.stringify({ verify: { verify_trust: false } });

/**
 * The manifest store in `bytes`, parsed and validated by c2pa-rs; null when there is none or it
 * cannot be parsed at all.
 */
export async function readManifestStore(bytes: Buffer, mimeType: string): Promise<ManifestStoreReport | null> {
	await loadC2pa();
	let reader: WasmReader;
	try {
		reader = await WasmReader.fromBytes(mimeType, bytes, READING_SETTINGS);
	} catch {
		return null;
	}
	try {
		return JSON.parse(reader.json()) as ManifestStoreReport;
	} finally {
		reader.free();
	}
}

/**
 * An ingredient read from its bytes (its own manifest store comes along, valid or not); bytes whose
 * manifest cannot even be parsed are still named as the ingredient, without their store.
 */
async function addIngredient(builder: WasmBuilder, { bytes, mimeType, ingredient }: SigningIngredient): Promise<void> {
	try {
		await builder.addIngredientFromBlob(JSON.stringify(ingredient), mimeType, asBlob(bytes));
	} catch {
		builder.addIngredient(JSON.stringify({ ...ingredient, format: mimeType }));
	}
}

/**
 * The bytes as the WASM build reads a browser Blob: it asks only for `size`, `slice` and a
 * FileReaderSync to read a slice, which Node lacks. Nothing is copied until a slice is read.
 */
class BytesBlob implements ReadableBlob {
	constructor(readonly bytes: Uint8Array) {}

	get size(): number {
		return this.bytes.length;
	}

	slice(start?: number, end?: number): BytesBlob {
		return new BytesBlob(this.bytes.subarray(start, end));
	}

	read(): ArrayBuffer {
		const { bytes } = this;
		// The engine copies what it reads into its own memory: a slice that is the whole buffer
		// is handed over as it is, not copied once more (a 3 MB image read whole).
		const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
		if (whole && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
		return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
	}
}

function asBlob(bytes: Buffer): Blob {
	return new BytesBlob(bytes) as unknown as Blob;
}

function provideFileReaderSync(): void {
	const global = globalThis as { FileReaderSync?: unknown };
	global.FileReaderSync ??= class {
		readAsArrayBuffer(blob: ReadableBlob): ArrayBuffer {
			return blob.read();
		}
	};
}
