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

export function brokenLinks(document: string, repositoryUrl: string, root: string): string[] {
	const broken: string[] = [];
	for (const target of linkTargets(readFileSync(document, 'utf8'))) {
		const resolved = resolve(target, document, repositoryUrl, root);
		if (!resolved) continue;
		if (!existsSync(resolved.file)) broken.push(`${target}: no file ${path.relative(root, resolved.file)}`);
		else if (resolved.anchor !== '' && statSync(resolved.file).isFile() && resolved.file.endsWith('.md') && !anchorsOf(resolved.file).has(decodeURIComponent(resolved.anchor))) {
			broken.push(`${target}: no heading #${resolved.anchor} in ${path.relative(root, resolved.file)}`);
		}
	}
	return broken;
}
