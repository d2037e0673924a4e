/**
 * No function of the service is longer than a reader can hold at once (server/src/README.md): a
 * function, method or closure over `MAX_LINES` lines, nested functions included, fails here with
 * its place. The check reads the sources with TypeScript's own parser.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
const MAX_LINES = 80;

function sources(folder: string): string[] {
	return readdirSync(folder, { recursive: true, encoding: 'utf8' })
		.filter((name) => name.endsWith('.ts'))
		.map((name) => join(folder, name));
}

/** Each function-like node with a body longer than `maxLines`, as `file:line (n lines)`. */
function longFunctions(file: string, text: string, maxLines: number): string[] {
	const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
	const found: string[] = [];
	const visit = (node: ts.Node): void => {
		if (ts.isFunctionLike(node) && 'body' in node && node.body) {
			const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
			const lines = source.getLineAndCharacterOfPosition(node.end).line - first + 1;
			if (lines > maxLines) found.push(`${relative(ROOT, file)}:${first + 1} (${lines} lines)`);
		}
		ts.forEachChild(node, visit);
	};
	visit(source);
	return found;
}

test(`no function in server/src is over ${MAX_LINES} lines`, () => {
	const files = sources(join(ROOT, 'server', 'src'));
	expect(files.length).toBeGreaterThan(100);
	expect(files.flatMap((file) => longFunctions(file, readFileSync(file, 'utf8'), MAX_LINES))).toEqual([]);
});

test('the check finds a long function, a long method and a long closure, and passes a short one', () => {
	const body = (lines: number) => Array.from({ length: lines }, (_, index) => `\tconst v${index} = ${index};`).join('\n');
	const text = [
		`export function long() {\n${body(MAX_LINES)}\n}`,
		`export function short() {\n${body(MAX_LINES - 2)}\n}`,
		`class C {\n\tmethod() {\n${body(MAX_LINES)}\n\t}\n}`,
		`export const closure = () => {\n${body(MAX_LINES)}\n};`,
	].join('\n');
	const found = longFunctions(join(ROOT, 'sample.ts'), text, MAX_LINES);
	expect(found).toHaveLength(3);
	expect(found[0]).toBe('sample.ts:1 (82 lines)');
});
