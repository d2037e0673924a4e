/**
 * The published artifact: what `npm pack` puts in the tarball, and the verdict of n8n's own
 * community-package scanner on it (no runtime dependencies, no restricted imports or globals).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packPackage } = require('../../scripts/n8n/community-package.cjs') as { packPackage: (destination?: string) => string };

let unpacked: string;
let files: string[];

beforeAll(() => {
	const tarball = packPackage();
	unpacked = mkdtempSync(join(tmpdir(), 'imagegen-unpacked-'));
	execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
	files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
		.split('\n')
		.filter(Boolean)
		.map((file) => file.replace(/^package\//, ''));
}, 120_000);

test('the tarball holds only the built package: dist of nodes, credentials, core, icons and index, plus README, LICENSE, package.json', () => {
	const outside = files.filter((file) => !/^dist\/(nodes|credentials|core|icons)\//.test(file) && !/^dist\/index\.(js|d\.ts|js\.map)$/.test(file));
	expect(outside.sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
	for (const required of [
		'dist/nodes/ImageGen/ImageGen.node.js',
		'dist/nodes/ImageGen/ImageGen.node.json',
		'dist/nodes/ImageGenUpload/ImageGenUpload.node.js',
		'dist/nodes/ImageGenUpload/ImageGenUpload.node.json',
		'dist/credentials/ImageGenApi.credentials.js',
		'dist/core/models.js',
		'dist/icons/imagegen.svg',
		'dist/icons/imagegen.dark.svg',
		'dist/icons/upload.svg',
		'dist/icons/upload.dark.svg',
	]) {
		expect(files).toContain(required);
	}
	expect(files.some((file) => file.startsWith('server/') || file.startsWith('test/') || file.startsWith('dist/server'))).toBe(false);
});

test('package.json: community-node keyword, n8n section pointing at files that exist, no runtime dependencies', () => {
	const manifest = JSON.parse(readFileSync(join(unpacked, 'package', 'package.json'), 'utf8'));
	expect(manifest.keywords).toContain('n8n-community-node-package');
	expect(manifest.dependencies ?? {}).toEqual({});
	expect(manifest.peerDependencies).toEqual({ 'n8n-workflow': '*' });
	for (const path of [...manifest.n8n.nodes, ...manifest.n8n.credentials]) expect(files).toContain(path);
});

test('repository, homepage and author agree, in both packages (n8n verifies a package against its GitHub repository and owner)', () => {
	const manifest = JSON.parse(readFileSync(join(unpacked, 'package', 'package.json'), 'utf8'));
	const match = /^git\+https:\/\/github\.com\/([\w.-]+)\/([\w.-]+?)\.git$/.exec(manifest.repository.url);
	expect(match).not.toBeNull();
	const [, owner, repository] = match!;
	expect(manifest.repository.type).toBe('git');
	expect(manifest.homepage.startsWith(`https://github.com/${owner}/${repository}`)).toBe(true);
	expect(manifest.author.name.toLowerCase()).toBe(owner!.toLowerCase());
	expect(manifest.author.email).toMatch(/^[^@\s]+@[^@\s]+$/);

	const server = JSON.parse(readFileSync(join(__dirname, '..', '..', 'server', 'package.json'), 'utf8'));
	expect(server.repository).toEqual({ ...manifest.repository, directory: 'server' });
	expect(server.author).toEqual(manifest.author);
	expect(server.homepage.startsWith(`https://github.com/${owner}/${repository}`)).toBe(true);
	expect(server.bugs.url).toBe(`https://github.com/${owner}/${repository}/issues`);
});

function scan(packageDir: string): { passed: boolean; message: string; details: string } {
	return JSON.parse(execFileSync(process.execPath, [join(__dirname, 'scan-package.mjs'), packageDir], { encoding: 'utf8' }));
}

test("n8n's community-package scanner passes the unpacked tarball", () => {
	const verdict = scan(join(unpacked, 'package'));
	expect(verdict.details).toBe('');
	expect(verdict.passed).toBe(true);
}, 120_000);

test('the scanner does reject a node that uses a forbidden global (the check above can fail)', () => {
	const tampered = mkdtempSync(join(tmpdir(), 'imagegen-tampered-'));
	cpSync(join(unpacked, 'package'), tampered, { recursive: true });
	appendFileSync(join(tampered, 'dist', 'nodes', 'ImageGen', 'ImageGen.node.js'), '\nsetTimeout(() => process.exit(1), 10);\n');
	const verdict = scan(tampered);
	expect(verdict.passed).toBe(false);
	expect(verdict.details).toMatch(/setTimeout|process/);
}, 120_000);
