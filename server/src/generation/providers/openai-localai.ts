/**
 * LocalAI's version of OpenAI's images API (`OPENAI_SERVER=localai`), from its source
 * (mudler/LocalAI, core/http/routes/openai.go and core/http/endpoints/openai/image.go): there is
 * `POST /v1/images/generations` but no `/images/edits`; its JSON decoder ignores fields it does not
 * know, so a `negative_prompt` field is dropped without a word. It reads instead:
 * - `prompt` split at `|`: the part before the first `|` is the prompt, the part after it the
 *   negative prompt (anything after a second `|` is lost). There is no escape, so a `|` in either
 *   is refused here, naming the field, rather than silently turned into a negative prompt.
 * - `seed` (the request's seed overrides the model config's).
 * - `file`: the img2img source image, raw base64 (not a data URI) or a URL; one image.
 * - `size` as WxH, `response_format: "b64_json"` (else a URL under /generated-images/).
 */
import { ImageGenError } from '../../../../core/errors';
import type { SettledRequest } from '../provider';
import { Base64Text } from './json-body';

/** LocalAI's separator of prompt and negative prompt (ImageEndpoint: `strings.Split(prompt, "|")`). */
const NEGATIVE_SEPARATOR = '|';

export function localAiBody(model: string, size: string, request: SettledRequest, source: Buffer | undefined): Record<string, unknown> {
	refuseSeparator(request.prompt, 'prompt');
	if (request.negative_prompt) refuseSeparator(request.negative_prompt, 'negative_prompt');
	return {
		model,
		prompt: request.negative_prompt ? `${request.prompt}${NEGATIVE_SEPARATOR}${request.negative_prompt}` : request.prompt,
		n: 1,
		size,
		response_format: 'b64_json',
		...(typeof request.seed === 'number' ? { seed: request.seed } : {}),
		...(source ? { file: new Base64Text(source) } : {}),
	};
}

function refuseSeparator(text: string, field: 'prompt' | 'negative_prompt'): void {
	if (!text.includes(NEGATIVE_SEPARATOR)) return;
	throw new ImageGenError(
		400,
		`'${field}' must not contain '|' with this host: LocalAI reads what follows a '|' in the prompt as the negative prompt, and has no way to escape it`,
		{ param: field },
	);
}
