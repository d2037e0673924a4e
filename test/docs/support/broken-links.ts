/**
 * The links of one Markdown document that lead nowhere: a relative path to a file that does not
 * exist, or an #anchor that no heading of the target document gets. Links into this repository on
 * GitHub (how the server's README, which ships to npm alone, points back) are checked as the
 * local files they name. Other absolute links are left alone: tests make no network calls.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { headingAnchors, linkTargets } from './markdown';

const anchorsByFile = new Map<string, Set<string>>();

function anchorsOf(file: string): Set<string> {
	let anchors = anchorsByFile.get(file);
	if (!anchors) {
		anchors = headingAnchors(readFileSync(file, 'utf8'));
		anchorsByFile.set(file, anchors);
	}
	return anchors;
}

/** `path#anchor` as its two halves; a `#` inside the anchor stays there. */
function splitAnchor(target: string): { location: string; anchor: string } {
	const hash = target.indexOf('#');
	return hash === -1 ? { location: target, anchor: '' } : { location: target.slice(0, hash), anchor: target.slice(hash + 1) };
}

/** The local file (and anchor) a link into this repository on GitHub names, or undefined for any other URL. */
function inRepository(target: string, repositoryUrl: string, root: string): { file: string; anchor: string } | undefined {
	if (!target.startsWith(repositoryUrl)) return undefined;
	const { location, anchor } = splitAnchor(target.slice(repositoryUrl.length));
	if (location === '') return { file: path.join(root, 'README.md'), anchor: anchor === 'readme' ? '' : anchor };
	const inTree = /^\/(?:blob|tree)\/[^/]+\/(.+)$/.exec(location);
	return inTree?.[1] ? { file: path.join(root, decodeURIComponent(inTree[1])), anchor } : undefined;
}

function resolve(target: string, document: string, repositoryUrl: string, root: string): { file: string; anchor: string } | undefined {
	const repository = inRepository(target, repositoryUrl, root);
	if (repository) return repository;
	if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined;
	const { location, anchor } = splitAnchor(target);
	const file = location === '' ? document : path.resolve(path.dirname(document), decodeURIComponent(location.replace(/\?.*$/, '')));
	return { file, anchor };
}

/** Why a resolved link leads nowhere, or undefined when its file (and heading) exist. */
function problemOf(target: string, resolved: { file: string; anchor: string }, root: string): string | undefined {
	if (!existsSync(resolved.file)) return `${target}: no file ${path.relative(root, resolved.file)}`;
	if (resolved.anchor !== '' && statSync(resolved.file).isFile() && resolved.file.endsWith('.md') && !anchorsOf(resolved.file).has(decodeURIComponent(resolved.anchor))) {
		return `${target}: no heading #${resolved.anchor} in ${path.relative(root, resolved.file)}`;
	}
	return undefined;
}

export function brokenLinks(document: string, repositoryUrl: string, root: string): string[] {
	const broken: string[] = [];
	for (const target of linkTargets(readFileSync(document, 'utf8'))) {
		const resolved = resolve(target, document, repositoryUrl, root);
		const problem = resolved && problemOf(target, resolved, root);
		if (problem) broken.push(problem);
	}
	return broken;
}

/**
 * What is wrong with an absolute URL that must lead into this repository's files (the Docs links
 * n8n shows beside a node or credential), or undefined when it names an existing file and heading.
 * A URL GitHub would not map to a file (another site, `?tab=…` views of the README) is a problem.
 */
export function brokenRepositoryUrl(url: string, repositoryUrl: string, root: string): string | undefined {
	const resolved = inRepository(url, repositoryUrl, root);
	if (!resolved) return `${url}: not a file of ${repositoryUrl}`;
	return problemOf(url, resolved, root);
}
