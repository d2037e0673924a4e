/** `imagegen-server --help`, from the option rows. */
import { defaultText, type OptionRow } from './option-row';
import { OPTIONS } from './options';

/** `--port <n>`, or `--allow-private-urls` for a switch. */
export function usage(row: OptionRow): string {
	return row.type.placeholder === undefined ? `--${row.flag}` : `--${row.flag} ${row.placeholder ?? row.type.placeholder}`;
}

export function helpText(): string {
	const rows = (OPTIONS as readonly OptionRow[]).map((row) => `  ${usage(row).padEnd(38)}${row.help}\n  ${''.padEnd(38)}env ${row.env}; default ${defaultText(row)}`);
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
