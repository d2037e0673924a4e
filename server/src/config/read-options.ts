/**
 * Reads every row's value from the command line (node:util's parseArgs) or, failing that, its
 * environment variable, in row order. Errors name the flag, and the variable too when the value
 * came from there.
 */
import { parseArgs } from 'node:util';
import { isSwitch, optionName, type OptionRow } from './option-row';
import { selectsProvider, type ProviderSelection } from './provider-selection';
import type { ServiceConfig } from './service-config';

/** A configuration value the service cannot start with; its message names the flag (and variable) to fix. */
export class ConfigError extends Error {
	override name = 'ConfigError';
}

type Rows = readonly OptionRow[];

/** The parsed value of every row, by flag. */
export type OptionValues<R extends Rows> = { [Row in R[number] as Row['flag']]: Row extends OptionRow<string, infer Value, keyof ServiceConfig> ? Value : never };

interface ReadOptions<R extends Rows> {
	values: OptionValues<R>;
	/** The trimmed text each given option had. */
	texts: Partial<Record<R[number]['flag'], string>>;
	/** `--flag`, or `--flag (VARIABLE)` when the value came from the environment (VARIABLE alone for an environment-only row): for error messages. */
	nameOf(flag: R[number]['flag']): string;
}

/** What the command line asks for instead of a service: `--help` or `--version`. */
export type InfoRequest = 'help' | 'version';

export function readOptions<R extends Rows>(rows: R, argv: readonly string[], env: NodeJS.ProcessEnv): ReadOptions<R> | InfoRequest {
	const fromFlags = readFlags(rows, argv);
	if (typeof fromFlags === 'string') return fromFlags;
	const nameOf = (flag: string) => {
		const row = rows.find((candidate) => candidate.flag === flag)!;
		return fromFlags.has(flag) || row.environmentOnly ? optionName(row) : `--${flag} (${row.env})`;
	};
	const values: Record<string, unknown> = {};
	const texts: Record<string, string> = {};
	for (const row of rows) {
		if (row.provider && !selectsProvider(values.providers as ProviderSelection | undefined, row.provider)) {
			values[row.flag] = row.default;
			continue;
		}
		// An empty flag value shadows the variable, and a blank value counts as not given.
		const given = (fromFlags.get(row.flag) ?? env[row.env])?.trim() || undefined;
		const condition = row.onlyWith && `--${row.onlyWith.flag} ${row.onlyWith.value}`;
		const applies = !row.onlyWith || values[row.onlyWith.flag] === row.onlyWith.value;
		if (!applies && given !== undefined) throw new ConfigError(`${nameOf(row.flag)} applies only with ${condition}`);
		if (applies && given === undefined && row.onlyWith?.required) throw new ConfigError(`${nameOf(row.flag)} is required with ${condition}`);
		const parsed = given === undefined ? undefined : row.type.schema.safeParse(given);
		if (parsed?.success === false) throw new ConfigError(`${nameOf(row.flag)}${parsed.error.issues[0]!.message}`);
		values[row.flag] = parsed === undefined ? row.default : parsed.data;
		if (given !== undefined) texts[row.flag] = given;
	}
	return { values: values as OptionValues<R>, texts: texts as ReadOptions<R>['texts'], nameOf };
}

/** An option of parseArgs' tokens without its value: `--port --host x` is a missing port, not a port named "--host" (that is written --port=--host). */
export const lacksValue = (token: { value?: string; inlineValue?: boolean }): boolean => token.value === undefined || (!token.inlineValue && token.value.startsWith('--'));

/** The rows with a flag as parseArgs options: a switch is a boolean, every other option takes a text. */
export const argOptions = (rows: Rows): Record<string, { type: 'boolean' | 'string' }> =>
	Object.fromEntries(rows.filter((row) => !row.environmentOnly).map((row) => [row.flag, { type: isSwitch(row) ? 'boolean' : 'string' }]));

/** The options given on the command line, by flag (the last of a repeated one wins); a switch without `=value` reads as 'true'. */
function readFlags(rows: Rows, argv: readonly string[]): Map<string, string> | InfoRequest {
	const rowOf = new Map(rows.map((row) => [row.flag, row]));
	// Not strict: a switch may be written --flag=false, and the errors below name the flag the way the others do.
	const { tokens } = parseArgs({
		args: [...argv],
		options: { ...argOptions(rows), help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
		strict: false,
		allowPositionals: true,
		tokens: true,
	});
	const values = new Map<string, string>();
	for (const token of tokens) {
		if (token.kind !== 'option') throw new ConfigError(`Unexpected argument '${token.kind === 'positional' ? token.value : '--'}' (options start with --; see --help)`);
		if (token.name === 'help' || token.name === 'version') return token.name;
		const row = rowOf.get(token.name);
		if (row === undefined) throw new ConfigError(`Unknown option '${token.rawName}' (see --help)`);
		if (row.environmentOnly) throw new ConfigError(`${token.rawName} is no flag: a credential is read only from ${row.env}, as a flag's value would show in the process list`);
		if (!isSwitch(row) && lacksValue(token)) throw new ConfigError(`--${row.flag} needs a value`);
		values.set(row.flag, token.value ?? 'true');
	}
	return values;
}
