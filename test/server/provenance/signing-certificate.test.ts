/**
 * The operator's own certificate (--c2pa-cert, --c2pa-key): it signs, the start-up line names it,
 * and a verifier that trusts the operator's root finds the manifests trusted. Half a pair, or a key
 * that is not the certificate's, stops the service at start with the flag named.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeOwnCertificate } from '../../../server/src/provenance/own-certificate';
import { SERVER_CLI, startServer } from '../../helpers/server';
import { activeManifest, readC2paManifest } from '../support/c2pa-reader';
import { postJson } from '../support/http';

let dir: string;
let certPath: string;
let keyPath: string;
let operatorRoot: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), 'imagegen-cert-'));
	const operator = await makeOwnCertificate('Example Newsroom');
	certPath = join(dir, 'chain.pem');
	keyPath = join(dir, 'key.pem');
	writeFileSync(certPath, operator.chainPem);
	writeFileSync(keyPath, operator.keyPem);
	operatorRoot = operator.chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.at(-1)!;
	writeFileSync(join(dir, 'other-key.pem'), (await makeOwnCertificate('Somebody Else')).keyPem);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('the operator certificate signs; the start-up line names it; no certificate is made in the data dir', async () => {
	const server = await startServer({ env: { IMAGEGEN_C2PA_CERT: certPath, IMAGEGEN_C2PA_KEY: keyPath } });
	try {
		expect(server.output()).toContain(`C2PA signer: Example Newsroom content credentials (${certPath})`);
		const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', output_format: 'webp' });
		const report = await readC2paManifest(Buffer.from(answer.body.data[0].b64_json, 'base64'), 'image/webp', operatorRoot);
		expect(report!.validation_state).toBe('Trusted');
		expect(activeManifest(report!).signature_info).toMatchObject({ common_name: 'Example Newsroom content credentials' });
		expect(existsSync(join(server.dataDir, 'c2pa'))).toBe(false);
	} finally {
		await server.stop({ removeData: true });
	}
});

test.each([
	[['--c2pa-cert', 'chain.pem'], /--c2pa-key \(IMAGEGEN_C2PA_KEY\) is required with --c2pa-cert/],
	[['--c2pa-key', 'key.pem'], /--c2pa-cert \(IMAGEGEN_C2PA_CERT\) is required with --c2pa-key/],
	[['--provenance', 'maybe'], /--provenance must be one of on, off; got 'maybe'/],
])('%j exits with 2 naming the flag', (args, message) => {
	const result = spawnSync(process.execPath, [SERVER_CLI, ...args], { encoding: 'utf8', cwd: dir });
	expect(result.status).toBe(2);
	expect(result.stderr).toMatch(message);
});

test('a key that is not the certificate’s stops the start with a clear message', () => {
	const result = spawnSync(process.execPath, [SERVER_CLI, '--port', '0', '--data-dir', join(dir, 'data'), '--c2pa-cert', certPath, '--c2pa-key', join(dir, 'other-key.pem')], {
		encoding: 'utf8',
		timeout: 30_000,
	});
	expect(result.status).toBe(1);
	expect(result.stderr).toContain(`the C2PA key does not belong to the first certificate of ${certPath}`);
});
