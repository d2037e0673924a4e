/**
 * Who signs the C2PA manifests: the operator's certificate and key (--c2pa-cert, --c2pa-key, PEM),
 * or one made at first start and kept in <data-dir>/c2pa/ (key readable by the owner only), so
 * every later start and every replica on the same data dir signs with the same identity.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SigningCredentials {
	/** DER certificates, the signing one first. */
	chain: Buffer[];
	key: KeyObject;
	/** Where they came from, for the start-up lines. */
	description: string;
	/** PEM of the certificate that verifiers should trust (the last of the chain). */
	anchorPem: string;
}

interface CredentialSources {
	certPath?: string;
	keyPath?: string;
	dataDir: string;
	organization: string;
}

const OWN_CERTIFICATE_DIR = 'c2pa';
const CHAIN_FILE = 'signer-chain.pem';
const KEY_FILE = 'signer-key.pem';

export async function loadSigningCredentials(sources: CredentialSources): Promise<SigningCredentials> {
	if (sources.certPath !== undefined && sources.keyPath !== undefined) {
		const credentials = parseCredentials(await readFile(sources.certPath, 'utf8'), await readFile(sources.keyPath, 'utf8'), sources.certPath);
		return { ...credentials, description: `${subjectOf(credentials.chain[0]!)} (${sources.certPath})` };
	}
	const dir = join(sources.dataDir, OWN_CERTIFICATE_DIR);
	const { chainPem, keyPem, created } = await readOrMakeOwn(dir, sources);
	const credentials = parseCredentials(chainPem, keyPem, join(dir, CHAIN_FILE));
	const verb = created ? 'made and kept' : 'kept';
	return { ...credentials, description: `${subjectOf(credentials.chain[0]!)}, self-made (${verb} in ${dir}; set --c2pa-cert and --c2pa-key to use your own)` };
}

async function readOrMakeOwn(dir: string, sources: CredentialSources): Promise<{ chainPem: string; keyPem: string; created: boolean }> {
	const existing = await readOwn(dir);
	if (existing) return { ...existing, created: false };
	// Loaded only to make one: every later start does without the X.509 library and its heap.
	const { makeOwnCertificate } = await import('./own-certificate');
	const made = await makeOwnCertificate(sources.organization);
	// Both files appear at once (a directory renamed into place): a replica starting at the same
	// moment either sees none and loses the race, or sees both.
	await mkdir(sources.dataDir, { recursive: true });
	const staging = await mkdtemp(join(sources.dataDir, '.c2pa-'));
	try {
		await writeFile(join(staging, KEY_FILE), made.keyPem, { mode: 0o600 });
		await writeFile(join(staging, CHAIN_FILE), made.chainPem, { mode: 0o644 });
		await rename(staging, dir);
		return { ...made, created: true };
	} catch (error) {
		await rm(staging, { recursive: true, force: true });
		const theirs = await readOwn(dir);
		if (theirs) return { ...theirs, created: false };
		throw error;
	}
}

async function readOwn(dir: string): Promise<{ chainPem: string; keyPem: string } | null> {
	try {
		const keyPath = join(dir, KEY_FILE);
		const keyPem = await readFile(keyPath, 'utf8');
		await chmod(keyPath, 0o600).catch(() => undefined);
		return { chainPem: await readFile(join(dir, CHAIN_FILE), 'utf8'), keyPem };
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
		throw error;
	}
}

function parseCredentials(chainPem: string, keyPem: string, certPath: string): Omit<SigningCredentials, 'description'> {
	const blocks = chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
	if (blocks.length === 0) throw new Error(`${certPath} holds no PEM certificate`);
	const certificates = blocks.map((block) => new X509Certificate(block));
	let key: KeyObject;
	try {
		key = createPrivateKey(keyPem);
	} catch (error) {
		throw new Error(`the C2PA key is not a PEM private key: ${(error as Error).message}`);
	}
	if (!certificates[0]!.checkPrivateKey(key)) throw new Error(`the C2PA key does not belong to the first certificate of ${certPath}`);
	return { chain: certificates.map((certificate) => certificate.raw), key, anchorPem: blocks.at(-1)! };
}

function subjectOf(der: Buffer): string {
	const subject = new X509Certificate(der).subject;
	return /CN=([^\n]+)/.exec(subject)?.[1] ?? subject.replace(/\n/g, ', ');
}
