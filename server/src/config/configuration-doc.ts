/** docs/configuration.md, from the option rows (scripts/config-docs.mjs writes it; a test keeps it current). */
import { usage } from './help';
import { defaultText, type OptionRow } from './option-row';
import { OPTIONS } from './options';

const code = (text: string) => `\`${text}\``;
/** A table cell: a pipe would end the cell. */
const cell = (text: string) => text.replace(/\|/g, '\\|');
/** Plain words of a row, where `<data-dir>` would read as an HTML tag and `*` as emphasis. */
const prose = (text: string) => text.replace(/[<>*_]/g, (character) => `\\${character}`);

function meaning(row: OptionRow): string {
	if (!row.onlyWith) return prose(row.help);
	const condition = code(`--${row.onlyWith.flag} ${row.onlyWith.value}`);
	return `${prose(row.help)}. ${row.onlyWith.required ? 'Required' : 'Read only'} with ${condition}`;
}

export function configurationMarkdown(): string {
	const rows = (OPTIONS as readonly OptionRow[]).map((row) => {
		const shown = defaultText(row);
		// A written-out default such as "(none)" reads as prose, a value as code.
		const defaultCell = shown.startsWith('(') ? prose(shown.slice(1, -1)) : code(shown);
		return `| ${cell(code(usage(row)))} | ${code(row.env)} | ${cell(defaultCell)} | ${cell(meaning(row))} |`;
	});
	return [
		'# Configuration',
		'',
		'<!-- Generated from server/src/config/options.ts by `npm run docs:config`; edit the rows there, not this file. -->',
		'',
		'Every flag of `imagegen-server` has an environment variable; a flag wins over its variable, and an',
		'empty value counts as not set. A bad value stops the service with a message naming the flag (and',
		'the variable, when the value came from there) and exit code 2. `npx imagegen-server --help` prints',
		'the same list; `npx imagegen-server --version` prints the version.',
		'',
		'| Flag | Environment | Default | Meaning |',
		'|---|---|---|---|',
		...rows,
		'',
	].join('\n');
}
