/**
 * Characters that must never reach an operator's terminal or page raw: C0 and C1 controls
 * (escape sequences can clear a screen, retitle a window or forge a line), Unicode line and
 * paragraph separators, and the bidi embeddings, overrides and isolates that reorder what is shown
 * (`invoice\u202egnp.exe` reads as "invoiceexe.png"). Key names refuse them; printing escapes them.
 */
const UNSAFE_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_CHARACTERS = new RegExp(UNSAFE_CHARACTER.source, 'g');

export function hasUnsafeCharacter(text: string): boolean {
	return UNSAFE_CHARACTER.test(text);
}

/** The text with each unsafe character written as a visible `\uXXXX` (valid inside a JSON string too). */
export function escapeUnsafeCharacters(text: string): string {
	return text.replace(UNSAFE_CHARACTERS, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
