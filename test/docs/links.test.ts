/**
 * Every relative link and #anchor in the project's documents leads somewhere, so moving a section
 * between pages cannot leave a reader at a dead link. Anchors are GitHub's heading slugs.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ImageGenApi } from '../../credentials/ImageGenApi.credentials';
import { brokenLinks, brokenRepositoryUrl } from './support/broken-links';
import { githubSlug, headingAnchors } from './support/markdown';

const root = path.join(__dirname, '../..');
const repositoryUrl = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { repository: { url: string } }).repository.url
	.replace(/^git\+/, '')
	.replace(/\.git$/, '');
const docsDir = path.join(root, 'docs');
const docsPages = existsSync(docsDir) ? readdirSync(docsDir).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`) : [];
const documents = ['README.md', 'CHANGELOG.md', 'SECURITY.md', 'server/README.md', 'test/README.md', ...docsPages];

test.each(documents)('every link in %s resolves', (document) => {
	expect(brokenLinks(path.join(root, document), repositoryUrl, root)).toEqual([]);
});

/** The Docs links n8n shows: the credential's documentationUrl and every URL in the nodes' codex files. */
function nodeDocsLinks(): string[] {
	const nodesDir = path.join(root, 'nodes');
	const codexFiles = readdirSync(nodesDir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.node.json'));
	const urls = codexFiles.flatMap((file) => {
		const codex = JSON.parse(readFileSync(path.join(nodesDir, file), 'utf8')) as { resources?: Record<string, { url: string }[]> };
		return Object.values(codex.resources ?? {}).flatMap((links) => links.map((link) => link.url));
	});
	return [new ImageGenApi().documentationUrl, ...urls];
}

test('the nodes\' and the credential\'s Docs links lead to existing sections of the repository\'s documents', () => {
	const links = nodeDocsLinks();
	expect(links.length).toBeGreaterThanOrEqual(5);
	expect(links.map((url) => brokenRepositoryUrl(url, repositoryUrl, root)).filter(Boolean)).toEqual([]);
});

test('every page in docs/ is linked from the README', () => {
	const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
	expect(docsPages.filter((page) => !readme.includes(`](${page}`))).toEqual([]);
});

test('anchors are GitHub heading slugs: code and punctuation dropped, repeats numbered', () => {
	expect(githubSlug('n8n: `npm start` and the end-to-end tests')).toBe('n8n-npm-start-and-the-end-to-end-tests');
	expect(githubSlug('Hosted files: lifetime, info, delete, fitting, idempotency')).toBe('hosted-files-lifetime-info-delete-fitting-idempotency');
	expect(githubSlug('Keys — and [budgets](x.md)')).toBe('keys--and-budgets');
	expect([...headingAnchors('# Images\n```sh\n# not a heading\n```\n## Images\n### Images\n')]).toEqual(['images', 'images-1', 'images-2']);
});

test('a missing file, a missing heading and a dead link into the repository on GitHub are all reported', () => {
	const dir = mkdtempSync(path.join(tmpdir(), 'imagegen-links-'));
	writeFileSync(path.join(dir, 'README.md'), '# Start\n');
	writeFileSync(
		path.join(dir, 'page.md'),
		[
			'# Page',
			'[ok](README.md#start) [ok](#page) [ok](https://example.com/nowhere) `[code](nowhere.md)`',
			'[gone](nowhere.md) [no heading](README.md#finish) [self](#other)',
			`[repo](${repositoryUrl}/blob/main/missing.md) [repo ok](${repositoryUrl}#readme)`,
		].join('\n'),
	);
	expect(brokenRepositoryUrl(`${repositoryUrl}?tab=readme-ov-file#start`, repositoryUrl, dir)).toBe(`${repositoryUrl}?tab=readme-ov-file#start: not a file of ${repositoryUrl}`);
	expect(brokenRepositoryUrl(`${repositoryUrl}/blob/main/page.md#finish`, repositoryUrl, dir)).toBe(`${repositoryUrl}/blob/main/page.md#finish: no heading #finish in page.md`);
	expect(brokenRepositoryUrl(`${repositoryUrl}/blob/main/page.md#page`, repositoryUrl, dir)).toBeUndefined();
	expect(brokenLinks(path.join(dir, 'page.md'), repositoryUrl, dir)).toEqual([
		'nowhere.md: no file nowhere.md',
		'README.md#finish: no heading #finish in README.md',
		'#other: no heading #other in page.md',
		`${repositoryUrl}/blob/main/missing.md: no file missing.md`,
	]);
});
