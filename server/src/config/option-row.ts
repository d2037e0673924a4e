/**
 * One row per option: flag (and from it the environment variable), type, default, help, and where
 * the value goes in ServiceConfig. Parsing, --help and docs/configuration.md are all read from the
 * rows, so adding a flag is adding a row (and its ServiceConfig field).
 */
import type { ProviderName } from './provider-selection';
import type { ServiceConfig } from './service-config';
import type { ValueType } from './value-types';

/** The option is read only when an earlier option has this value; given otherwise, it is refused. */
interface OnlyWith {
	readonly flag: string;
	readonly value: string;
	/** Must then be given (e.g. the bucket of `--storage s3`). */
	readonly required?: boolean;
}

/** A row as options.ts writes it; its environment variable follows from the flag unless it names its own. */
interface OptionSpec<Flag extends string = string, Value = unknown, Field extends keyof ServiceConfig = never> {
	/** Without the leading `--`; of an environment-only row, only the name its value is kept under. */
	readonly flag: Flag;
	/** The variable, where operators know another name than IMAGEGEN_<FLAG> (a host's own, e.g. REPLICATE_BASE_URL). */
	readonly env?: string;
	/**
	 * A credential: read only from its variable, never from a flag, whose value would show in the
	 * process list and the shell's history.
	 */
	readonly environmentOnly?: true;
	/**
	 * A setting of one host: read (and checked) only when `--providers` names that provider, and
	 * otherwise left at its default. Its variable may well be set for another program (OPENAI_API_KEY).
	 */
	readonly provider?: ProviderName;
	readonly type: ValueType<Value>;
	/** What --help and the docs show after the flag, when it says more than the type's (e.g. `<url>`). */
	readonly placeholder?: string;
	/** The value when neither the flag nor the variable is given. */
	readonly default: Value;
	/** Shown instead of the default value when that says too little, e.g. "(generated, kept in <data-dir>/api-key)". */
	readonly defaultText?: string;
	readonly help: string;
	readonly onlyWith?: OnlyWith;
	/**
	 * The ServiceConfig fields this value sets (`text` is the option's trimmed text when given). Rows
	 * without it are assembled by parse-config.ts, because their fields combine (storage).
	 */
	into?(value: Value, text: string | undefined): Pick<ServiceConfig, Field>;
}

export interface OptionRow<Flag extends string = string, Value = unknown, Field extends keyof ServiceConfig = never> extends OptionSpec<Flag, Value, Field> {
	/** The spec's own, or IMAGEGEN_ and the flag in upper case, `-` as `_`: `--data-dir` is IMAGEGEN_DATA_DIR. */
	readonly env: string;
}

/** A row with its types kept, so that the parsed values and the fields set are known to the compiler. */
export function option<const Flag extends string, Value, Field extends keyof ServiceConfig = never>(spec: OptionSpec<Flag, Value, Field>): OptionRow<Flag, Value, Field> {
	return { ...spec, env: spec.env ?? `IMAGEGEN_${spec.flag.toUpperCase().replace(/-/g, '_')}` };
}

/** `into` for a value that is the field as is. */
export function to<Field extends keyof ServiceConfig>(field: Field): (value: ServiceConfig[Field]) => Pick<ServiceConfig, Field> {
	return (value) => ({ [field]: value }) as Pick<ServiceConfig, Field>;
}

/** A switch needs no value on the command line: `--allow-private-urls` alone means true. */
export const isSwitch = (row: OptionRow): boolean => row.type.placeholder === undefined;

/** `--port <n>`, or `--allow-private-urls` for a switch: how --help and the docs write the option; none without a flag. */
export function usage(row: OptionRow): string | undefined {
	if (row.environmentOnly) return undefined;
	return isSwitch(row) ? `--${row.flag}` : `--${row.flag} ${row.placeholder ?? row.type.placeholder}`;
}

/** How error messages name the option: its flag, or its variable when it has no flag. */
export const optionName = (row: OptionRow): string => (row.environmentOnly ? row.env : `--${row.flag}`);

/** How the default reads in --help and the docs. */
export function defaultText(row: OptionRow): string {
	if (row.defaultText !== undefined) return row.defaultText;
	return row.default === undefined ? '(none)' : String(row.default);
}
