/**
 * The signing certificate made when the operator brings none: a local root (self-signed, the
 * anchor a verifier is given to trust) and a claim-signing certificate it issued, as the C2PA
 * certificate profile asks (an end-entity certificate is never its own issuer).
 */
import 'reflect-metadata';
import { KeyObject, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

interface OwnCertificate {
	/** Signing certificate first, then the root. */
	chainPem: string;
	keyPem: string;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const YEAR_MS = 365 * 24 * 3600 * 1000;
/** 1.3.6.1.5.5.7.3.4: C2PA accepts it for claim signing, and every X.509 tool knows it. */
const EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';

export async function makeOwnCertificate(organization: string, now = new Date()): Promise<OwnCertificate> {
	x509.cryptoProvider.set(webcrypto as never);
	const notBefore = new Date(now.getTime() - 24 * 3600 * 1000);
	const rootKeys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
	const root = await x509.X509CertificateGenerator.createSelfSigned({
		serialNumber: serial(),
		name: `CN=${organization} provenance root, O=${organization}`,
		notBefore,
		notAfter: new Date(now.getTime() + 20 * YEAR_MS),
		signingAlgorithm: ALGORITHM,
		keys: rootKeys,
		extensions: [
			new x509.BasicConstraintsExtension(true, 0, true),
			new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
			await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey),
		],
	});
	const signerKeys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
	const signer = await x509.X509CertificateGenerator.create({
		serialNumber: serial(),
		subject: `CN=${organization} content credentials, O=${organization}`,
		issuer: root.subject,
		notBefore,
		notAfter: new Date(now.getTime() + 10 * YEAR_MS),
		signingAlgorithm: ALGORITHM,
		publicKey: signerKeys.publicKey,
		signingKey: rootKeys.privateKey,
		extensions: [
			new x509.BasicConstraintsExtension(false, undefined, true),
			new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
			new x509.ExtendedKeyUsageExtension([EMAIL_PROTECTION], false),
			await x509.SubjectKeyIdentifierExtension.create(signerKeys.publicKey),
			await x509.AuthorityKeyIdentifierExtension.create(rootKeys.publicKey),
		],
	});
	return {
		chainPem: `${signer.toString('pem')}\n${root.toString('pem')}\n`,
		keyPem: KeyObject.from(signerKeys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString(),
	};
}

/** Positive, 16 random bytes, as RFC 5280 asks of a serial number. */
function serial(): string {
	const bytes = webcrypto.getRandomValues(new Uint8Array(16));
	bytes[0] = bytes[0]! & 0x7f;
	return Buffer.from(bytes).toString('hex');
}
