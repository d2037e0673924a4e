/**
 * How an option's text becomes its value: a zod schema over the trimmed, non-blank text (a blank
 * one counts as not given). A refused text's message continues the option's name, which the
 * reader puts in front: the flag, and the environment variable when the value came from there.
 */
import { z } from 'zod/v3';

export interface ValueType<Value> {
	/** What --help and the docs show after the flag; none for a switch, which needs no value on the command line. */
	readonly placeholder?: string;
	readonly schema: z.ZodType<Value, z.ZodTypeDef, string>;
}

/** ` must be <what>; got '<text>'` when `test` fails; a secret's text is never echoed, the message reaches logs. */
export function mustBe(what: string, test: (text: string) => boolean, secret = false): ValueType<string> {
	const echo = (text: string) => (secret ? '' : `; got '${text}'`);
	return { placeholder: '<value>', schema: z.string().refine(test, (text) => ({ message: ` must be ${what}${echo(text)}` })) };
}

export const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER): ValueType<number> => {
	const inRange = (text: string) => /^\d+$/.test(text) && Number(text) >= min && Number(text) <= max;
	return { placeholder: '<n>', schema: mustBe(`a whole number from ${min} to ${max}`, inRange).schema.transform(Number) };
};

export const positiveNumber: ValueType<number> = { placeholder: '<n>', schema: mustBe('a positive number', (text) => Number(text) > 0 && Number.isFinite(Number(text))).schema.transform(Number) };

export const text: ValueType<string> = { placeholder: '<value>', schema: z.string() };

const YES = ['1', 'true', 'yes', 'on'];
/** The words that turn a switch off (and `--trust-proxy`). */
export const NO = ['0', 'false', 'no', 'off'];

/** A switch: present on the command line means true; a value (or a variable) says yes or no. */
export const onOff: ValueType<boolean> = {
	schema: z
		.string()
		.toLowerCase()
		.refine((word) => YES.includes(word) || NO.includes(word), (word) => ({ message: ` must be true or false; got '${word}'` }))
		.transform((word) => YES.includes(word)),
};

/** One word of a fixed list, compared without case. */
export const oneOf = <const Word extends string>(allowed: readonly [Word, ...Word[]]): ValueType<Word> => ({
	placeholder: '<value>',
	schema: z.string().toLowerCase().pipe(z.enum(allowed, { errorMap: (_, context) => ({ message: ` must be one of ${allowed.join(', ')}; got '${String(context.data)}'` }) })),
});

/** A text read by `parse` (prices, providers), whose Error message follows the option's name after `separator`. */
export function parsedBy<Value>(parse: (text: string) => Value, separator = ': '): ValueType<Value> {
	const schema = z.string().transform((text, context) => {
		try {
			return parse(text);
		} catch (error) {
			context.addIssue({ code: 'custom', message: `${separator}${(error as Error).message}` });
			return z.NEVER;
		}
	});
	return { placeholder: '<value>', schema };
}

/** The entries of a comma-separated list, trimmed, blanks left out. */
export const listOf = (text: string): string[] =>
	text
		.split(',')
		.map((entry) => entry.trim())
		.filter((entry) => entry.length > 0);

export function isHttpUrl(value: string): boolean {
	try {
		const url = new URL(value);
		return url.protocol === 'http:' || url.protocol === 'https:';
	} catch {
		return false;
	}
}
