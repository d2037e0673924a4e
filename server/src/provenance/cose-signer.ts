/**
 * The claim signature as C2PA wants it: a COSE_Sign1 (RFC 9052) over the claim, detached payload,
 * the certificate chain in the protected header (x5chain), padded to exactly the space the
 * manifest reserved for it. c2pa-rs hands the whole structure to us in its WASM build, so it is
 * made here, from the key's type, with Node's crypto doing the signing.
 */
import { constants, sign, type KeyObject } from 'node:crypto';
import { Encoder, Tag } from 'cbor-x';

interface CoseAlgorithm {
	/** The c2pa-rs name. */
	c2pa: 'es256' | 'es384' | 'es512' | 'ps256' | 'ed25519';
	/** The COSE algorithm id (IANA registry). */
	id: number;
	sign(data: Buffer, key: KeyObject): Buffer;
}

const ecdsa = (c2pa: CoseAlgorithm['c2pa'], id: number, hash: string): CoseAlgorithm => ({
	c2pa,
	id,
	// COSE carries r‖s, not the DER that X.509 uses.
	sign: (data, key) => sign(hash, data, { key, dsaEncoding: 'ieee-p1363' }),
});

const CURVES: Record<string, CoseAlgorithm> = {
	prime256v1: ecdsa('es256', -7, 'sha256'),
	secp384r1: ecdsa('es384', -35, 'sha384'),
	secp521r1: ecdsa('es512', -36, 'sha512'),
};
const PS256: CoseAlgorithm = {
	c2pa: 'ps256',
	id: -37,
	sign: (data, key) => sign('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }),
};
const ED25519: CoseAlgorithm = { c2pa: 'ed25519', id: -8, sign: (data, key) => sign(null, data, key) };

function coseAlgorithmFor(key: KeyObject): CoseAlgorithm {
	const details = key.asymmetricKeyDetails;
	if (key.asymmetricKeyType === 'ec' && details?.namedCurve && CURVES[details.namedCurve]) return CURVES[details.namedCurve]!;
	if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss') return PS256;
	if (key.asymmetricKeyType === 'ed25519') return ED25519;
	throw new Error(`C2PA cannot sign with a ${key.asymmetricKeyType ?? 'unknown'} key${details?.namedCurve ? ` on ${details.namedCurve}` : ''}; use EC P-256/P-384/P-521, RSA or Ed25519`);
}

const X5CHAIN = 33;
const ALG = 1;
const SIGN1_TAG = 18;
const cbor = new Encoder({ mapsAsObjects: false, useRecords: false, tagUint8Array: false, variableMapSize: true });

export class CoseSigner {
	readonly reserveSize: number;
	private readonly protectedHeader: Buffer;

	constructor(
		private readonly key: KeyObject,
		chain: readonly Buffer[],
		readonly algorithm: CoseAlgorithm = coseAlgorithmFor(key),
	) {
		this.protectedHeader = Buffer.from(cbor.encode(new Map<number, unknown>([[ALG, algorithm.id], [X5CHAIN, chain.length === 1 ? chain[0] : chain]])));
		// The chain, a signature of up to 512 bytes (RSA-4096) and padding that always stays between
		// 256 and 65,535 bytes, where its CBOR length prefix has one size and any total is reachable.
		this.reserveSize = this.protectedHeader.length + 512 + 1024;
	}

	signClaim(claim: Uint8Array): Buffer {
		const payload = Buffer.from(claim.buffer, claim.byteOffset, claim.byteLength);
		const toBeSigned = cbor.encode(['Signature1', this.protectedHeader, Buffer.alloc(0), payload]);
		const signature = this.algorithm.sign(Buffer.from(toBeSigned), this.key);
		const encode = (padding: number) =>
			Buffer.from(cbor.encode(new Tag([this.protectedHeader, new Map([['pad', Buffer.alloc(padding)]]), null, signature], SIGN1_TAG)));
		// Measured with a padding of the same length-prefix size as the final one.
		const padding = this.reserveSize - (encode(256).length - 256);
		const encoded = encode(padding);
		if (encoded.length !== this.reserveSize) throw new Error(`the COSE signature does not fit the ${this.reserveSize} bytes reserved for it`);
		return encoded;
	}
}
