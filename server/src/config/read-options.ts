/**
 * Reads every row's value from the command line or, failing that, its environment variable, in
 * row order. Errors name the flag, and the variable too when the value came from there.
 */
import { ConfigError } from './config-error';
import type { OptionRow } from './option-row';
import type { ServiceConfig } from './service-config';

type Rows = readonly OptionRow[];

/** The parsed value of every row, by flag. */
export type OptionValues<R extends Rows> = { [Row in R[number] as Row['flag']]: Row extends OptionRow<string, infer Value, keyof ServiceConfig> ? Value : never };

export interface ReadOptions<R extends Rows> {
	values: OptionValues<R>;
	/** The trimmed text each given option had. */
	texts: Partial<Record<R[number]['flag'], string>>;
	/** `--flag`, or `--flag (VARIABLE)` when the value came from the environment: for error messages. */
	nameOf(flag: R[number]['flag']): string;
}

/** What the command line asks for instead of a service: `--help` or `--version`. */
export type InfoRequest = 'help' | 'version';

export function readOptions<R extends Rows>(rows: R, argv: readonly string[], env: NodeJS.ProcessEnv): ReadOptions<R> | InfoRequest {
	const fromFlags = readFlags(rows, argv);
	if (typeof fromFlags === 'string') return fromFlags;
	const rowOf = (flag: string) => rows.find((row) => row.flag === flag)!;
	const nameOf = (flag: string) => (fromFlags.has(flag) ? `--${flag}` : `--${flag} (${rowOf(flag).env})`);
	const values: Record<string, unknown> = {};
	const texts: Record<string, string> = {};
	for (const row of rows) {
		// An empty flag value shadows the variable, and either empty counts as not given.
		const given = nonEmpty(fromFlags.get(row.flag) ?? env[row.env]);
		if (row.onlyWith && values[row.onlyWith.flag] !== row.onlyWith.value) {
			if (given !== undefined) throw new ConfigError(`${nameOf(row.flag)} applies only with --${row.onlyWith.flag} ${row.onlyWith.value}`);
			values[row.flag] = row.default;
			continue;
		}
		const value = given === undefined ? undefined : row.type.parse(given, nameOf(row.flag));
		if (value === undefined && row.onlyWith?.required) {
			throw new ConfigError(`${nameOf(row.flag)} is required with --${row.onlyWith.flag} ${row.onlyWith.value}`);
		}
		values[row.flag] = value ?? row.default;
		if (value !== undefined) texts[row.flag] = given!.trim();
	}
	return { values: values as OptionValues<R>, texts: texts as ReadOptions<R>['texts'], nameOf };
}

const nonEmpty = (text: string | undefined) => (text === '' ? undefined : text);

/** The options given on the command line, by flag; a switch without `=value` reads as 'true'. */
function readFlags(rows: Rows, argv: readonly string[]): Map<string, string> | InfoRequest {
	const values = new Map<string, string>();
	for (let i = 0; i < argv.length; i++) {
		const argument = argv[i]!;
		if (argument === '--help' || argument === '-h') return 'help';
		if (argument === '--version') return 'version';
		const match = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(argument);
		const row = match && rows.find((candidate) => candidate.flag === match[1]);
		if (!match || !row) throw new ConfigError(`Unknown option '${argument}' (see --help)`);
		if (row.type.placeholder === undefined) {
			values.set(row.flag, match[2] ?? 'true');
			continue;
		}
		const value = match[2] ?? argv[i + 1];
		if (value === undefined || (match[2] === undefined && value.startsWith('--'))) throw new ConfigError(`--${row.flag} needs a value`);
		if (match[2] === undefined) i++;
		values.set(row.flag, value);
	}
	return values;
}
