/** `imagegen-server --help` and docs/configuration.md, both from the option rows (scripts/config-docs.mjs writes the page; a test keeps it current). */
import { defaultText, usage, type OptionRow } from './option-row';
import { OPTIONS } from './options';

const ROWS = OPTIONS as readonly OptionRow[];

/** Where the value may come from, as --help writes it under the option. */
const sources = (row: OptionRow) => (row.environmentOnly ? `env ${row.env} only (no flag)` : `env ${row.env}`);

/** The condition a row is read under, in --help's words; none when it is always read. */
function condition(row: OptionRow): string | undefined {
	if (row.onlyWith) return `${row.onlyWith.required ? 'required' : 'read only'} with --${row.onlyWith.flag} ${row.onlyWith.value}`;
	if (row.provider) return `read only when --providers names ${row.provider}`;
	return undefined;
}

export function helpText(): string {
	const rows = ROWS.map((row) => {
		const read = [sources(row), condition(row), `default ${defaultText(row)}`].filter(Boolean).join('; ');
		return `  ${(usage(row) ?? row.env).padEnd(38)}${row.help}\n  ${''.padEnd(38)}${read}`;
	});
	return [
		'Usage: imagegen-server [options]',
		'       imagegen-server keys create|list|revoke|rotate …  (manage API keys; see keys --help)',
		'       imagegen-server backup --to <file> [--data-dir <dir>]  (copy the database; see backup --help)',
		"       imagegen-server verify <file> [--data-dir <dir>]  (an image's C2PA manifest, watermark and generation; see verify --help)",
		'',
		'Image generation and 24-hour file hosting over HTTP (base path /v1).',
		'',
		'Options (each also read from its environment variable; flags win; credentials only from theirs):',
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
	if (row.provider) return `${prose(row.help)}. Read only when ${code('--providers')} names ${code(row.provider)}`;
	if (!row.onlyWith) return prose(row.help);
	const condition = code(`--${row.onlyWith.flag} ${row.onlyWith.value}`);
	return `${prose(row.help)}. ${row.onlyWith.required ? 'Required' : 'Read only'} with ${condition}`;
}

export function configurationMarkdown(): string {
	const rows = ROWS.map((row) => {
		const shown = defaultText(row);
		// A written-out default such as "(none)" reads as prose, a value as code.
		const defaultCell = shown.startsWith('(') ? prose(shown.slice(1, -1)) : code(shown);
		const flag = usage(row);
		return `| ${flag === undefined ? '(environment only)' : cell(code(flag))} | ${code(row.env)} | ${cell(defaultCell)} | ${cell(meaning(row))} |`;
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
		'The credentials of the hosts (API keys and tokens) have a variable and no flag: a value on the',
		'command line would show in the process list. The settings of a host keep the variable names its',
		'provider has always read (`REPLICATE_API_TOKEN`, `OPENAI_BASE_URL`, …) and are read only when',
		'`--providers` names that provider ([providers](providers.md)). A bad value stops the service with',
		'a message naming the flag (and the variable, when the value came from there) and exit code 2;',
		'so does a provider named in `--providers` without a setting it needs, naming the variable.',
		'`npx imagegen-server --help` prints the same list; `npx imagegen-server --version` prints the version.',
		'',
		'| Flag | Environment | Default | Meaning |',
		'|---|---|---|---|',
		...rows,
		'',
	].join('\n');
}
