/**
 * Just enough Markdown to check links the way GitHub renders them: headings and their anchors,
 * and the targets of inline and reference links. Fenced code is left out, and code spans when
 * looking for links, since a `[x](y)` or a `# line` in code is text, not a link or a heading.
 */

/** The lines outside fenced code blocks. */
function linesOutsideFences(markdown: string): string[] {
	const lines: string[] = [];
	let fence: string | undefined;
	for (const line of markdown.split('\n')) {
		const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
		if (fence === undefined && marker !== undefined) fence = marker;
		else if (fence !== undefined) {
			if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
		} else lines.push(line);
	}
	return lines;
}

/**
 * GitHub's heading anchor (as github-slugger makes it): the rendered text in lower case, with
 * everything but letters, marks, digits, connectors, spaces and hyphens dropped and each space a
 * hyphen. Backticks and emphasis marks are punctuation, so only a link's target must go first.
 */
export function githubSlug(headingText: string): string {
	return headingText
		.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
		.replace(/<[^>]+>/g, '')
		.trim()
		.toLowerCase()
		.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
		.replace(/ /g, '-');
}

/** Every anchor the document's headings get; a repeated slug gets -1, -2, … as on GitHub. */
export function headingAnchors(markdown: string): Set<string> {
	const anchors = new Set<string>();
	const seen = new Map<string, number>();
	for (const line of linesOutsideFences(markdown)) {
		const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
		if (!heading) continue;
		const slug = githubSlug(heading[1] ?? '');
		const count = seen.get(slug) ?? 0;
		seen.set(slug, count + 1);
		anchors.add(count === 0 ? slug : `${slug}-${count}`);
	}
	return anchors;
}

/** The targets of inline links and images, `[text](target "title")`, and of reference definitions. */
export function linkTargets(markdown: string): string[] {
	const targets: string[] = [];
	for (const line of linesOutsideFences(markdown)) {
		const prose = line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, '');
		for (const link of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+"[^"]*")?\s*\)/g)) targets.push((link[1] ?? '').replace(/^<|>$/g, ''));
		const definition = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
		if (definition?.[1]) targets.push(definition[1]);
	}
	return targets;
}
