/** `imagegen-server --help` and docs/configuration.md, both from the option rows (scripts/config-docs.mjs writes the page; a test keeps it current). */
import { defaultText, usage, type OptionRow } from './option-row';
import { OPTIONS } from './options';

const ROWS = OPTIONS as readonly OptionRow[];

export function helpText(): string {
	const rows = ROWS.map((row) => `  ${usage(row).padEnd(38)}${row.help}\n  ${''.padEnd(38)}env ${row.env}; default ${defaultText(row)}`);
	return [
		'Usage: imagegen-server [options]',
		'       imagegen-server keys create|list|revoke|rotate …  (manage API keys; see keys --help)',
		'       imagegen-server backup --to <file> [--data-dir <dir>]  (copy the database; see backup --help)',
		'',
		'Image generation and 24-hour file hosting over HTTP (base path /v1).',
		'',
		'Options (each also read from its environment variable; flags win):',
		...rows,
		'  --help                                Show this text',
		'  --version                             Print the version and exit',
		'',
	].join('\n');
}

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
	const rows = ROWS.map((row) => {
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
		'empty or blank value counts as not set. `--flag value` and `--flag=value` mean the same (a value',
		'that starts with `--` needs the `=`), the last of a repeated flag wins, and a switch alone means',
		'true (`--allow-private-urls=false`, or the variable set to `false`/`0`/`no`/`off`, turns it off).',
		'A bad value stops the service with a message naming the flag (and the variable, when the value',
		'came from there) and exit code 2. `npx imagegen-server --help` prints the same list;',
		'`npx imagegen-server --version` prints the version.',
		'',
		'| Flag | Environment | Default | Meaning |',
		'|---|---|---|---|',
		...rows,
		'',
	].join('\n');
}
