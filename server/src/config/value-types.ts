/**
 * How an option's text becomes its value. Each parser throws a ConfigError whose message starts
 * with `name` (the flag, and the environment variable when the value came from there), and returns
 * undefined for a blank text, which counts as not given.
 */
import { ConfigError } from './config-error';

export interface ValueType<Value> {
	/** What --help and the docs show after the flag; none for a switch, which needs no value on the command line. */
	readonly placeholder?: string;
	parse(text: string, name: string): Value | undefined;
}

export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): ValueType<number> {
	return {
		placeholder: '<n>',
		parse(text, name) {
			if (!/^\d+$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
				throw new ConfigError(`${name} must be a whole number from ${min} to ${max}; got '${text}'`);
			}
			return Number(text);
		},
	};
}

export const positiveNumber: ValueType<number> = {
	placeholder: '<n>',
	parse(text, name) {
		const number = Number(text.trim());
		if (text.trim() === '' || !Number.isFinite(number) || number <= 0) {
			throw new ConfigError(`${name} must be a positive number; got '${text}'`);
		}
		return number;
	},
};

export const text: ValueType<string> = {
	placeholder: '<value>',
	parse: (value) => value.trim() || undefined,
};

/** A text that passes `check` (which returns why not, or undefined); trimmed, blank = not given. */
export function checkedText(check: (value: string, name: string) => string | undefined): ValueType<string> {
	return {
		placeholder: '<value>',
		parse(value, name) {
			const trimmed = value.trim();
			if (trimmed === '') return undefined;
			const problem = check(trimmed, name);
			if (problem !== undefined) throw new ConfigError(problem);
			return trimmed;
		},
	};
}

/** A switch: present on the command line means true; a value (or a variable) says yes or no. */
export const onOff: ValueType<boolean> = {
	parse(value, name) {
		const normalized = value.trim().toLowerCase();
		if (['1', 'true', 'yes', 'on'].includes(normalized)) return true;
		if (['0', 'false', 'no', 'off'].includes(normalized)) return false;
		throw new ConfigError(`${name} must be true or false; got '${value}'`);
	},
};

/** One word of a fixed list, compared without case. */
export function oneOf<Word extends string>(allowed: readonly Word[]): ValueType<Word> {
	return {
		placeholder: '<value>',
		parse(value, name) {
			const word = value.trim().toLowerCase();
			if (word === '') return undefined;
			if (!(allowed as readonly string[]).includes(word)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}; got '${word}'`);
			return word as Word;
		},
	};
}

/** A text read by `parse` (prices, providers), whose Error message is reported after the option's name. */
export function parsedBy<Value>(parse: (value: string) => Value): ValueType<Value> {
	return {
		placeholder: '<value>',
		parse(value, name) {
			const trimmed = value.trim();
			if (trimmed === '') return undefined;
			try {
				return parse(trimmed);
			} catch (error) {
				throw new ConfigError(`${name}: ${(error as Error).message}`);
			}
		},
	};
}

export function isHttpUrl(value: string): boolean {
	try {
		const url = new URL(value);
		return url.protocol === 'http:' || url.protocol === 'https:';
	} catch {
		return false;
	}
}
