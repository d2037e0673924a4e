/**
 * The PostgreSQL and S3 engines are loaded only when the configuration chooses them: a service on
 * its data dir carries neither `pg` nor the AWS SDK in memory (nor sharp, until an image needs it). The built service is started in a
 * child process (test/server/support/loaded-packages.cjs) that reports the packages Node loaded.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3rver, type S3TestServer } from '../support/s3';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

jest.setTimeout(120_000);

const PROBE = join(__dirname, '..', 'support', 'loaded-packages.cjs');
const isAwsSdk = (name: string) => name.startsWith('@aws-sdk/') || name.startsWith('@smithy/');
const isPg = (name: string) => name === 'pg' || name.startsWith('pg-');

let dataDir: string;
beforeEach(() => (dataDir = mkdtempSync(join(tmpdir(), 'imagegen-lazy-'))));
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

async function loadedPackages(args: string[]): Promise<string[]> {
	const baseArgs = ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--api-keys', 'test-key-0123456789abcdef', '--log-level', 'warn'];
	const { stdout } = await promisify(execFile)(process.execPath, [PROBE, ...baseArgs, ...args], { env: process.env });
	return JSON.parse(stdout.trim().split('\n').pop()!) as string[];
}

describe('engines are loaded only when configured', () => {
	it('the embedded configuration loads neither the AWS SDK nor pg', async () => {
		const packages = await loadedPackages([]);
		// The probe sees the service's packages at all.
		expect(packages).toEqual(expect.arrayContaining(['fastify', '@fastify/multipart']));
		expect(packages.filter(isAwsSdk)).toEqual([]);
		expect(packages.filter(isPg)).toEqual([]);
		// Nor sharp: libvips is loaded by the first image that needs converting, fitting or drawing.
		expect(packages).not.toContain('sharp');
	});

	describe('with the engines configured', () => {
		let s3: S3TestServer;
		let postgres: TestPostgres;
		beforeAll(async () => {
			[s3, postgres] = await Promise.all([startS3rver('imagegen-lazy'), startTestPostgres()]);
		});
		afterAll(async () => {
			await Promise.all([s3?.stop(), postgres?.stop()]);
		});

		it('--storage s3 loads the AWS SDK, and not pg', async () => {
			const packages = await loadedPackages(['--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style']);
			expect(packages).toContain('@aws-sdk/client-s3');
			expect(packages.filter(isPg)).toEqual([]);
		});

		it('--database-url loads pg, and not the AWS SDK', async () => {
			const packages = await loadedPackages(['--database-url', await postgres.createDatabase()]);
			expect(packages).toContain('pg');
			expect(packages.filter(isAwsSdk)).toEqual([]);
		});
	});
});
