/**
 * The answer of `POST /provenance/verify` as the Verify operation's output item: the same three
 * objects, each field the camelCase of the API field it carries (`digital_source_type` →
 * `digitalSourceType`, `created_at` → `createdAt`). Without `c2pa.present` and `watermark.found`
 * there is no result to hand on; any other field is copied when it is of its documented type (a
 * null included: "no signer", "no record") and left out when it is not, so nothing is made up.
 */
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { fieldsOf, unusableAnswer } from '../shared/answers';

type Reader = (value: unknown) => string | boolean | null | undefined;

const textOrNull: Reader = (value) => (typeof value === 'string' || value === null ? value : undefined);
const flagOrNull: Reader = (value) => (typeof value === 'boolean' || value === null ? value : undefined);

/** For each API field of an object: its output name and how its value is read. */
const C2PA_FIELDS: ReadonlyArray<[string, string, Reader]> = [
	['present', 'present', flagOrNull],
	['valid', 'valid', flagOrNull],
	['signer', 'signer', textOrNull],
	['digital_source_type', 'digitalSourceType', textOrNull],
];
const WATERMARK_FIELDS: ReadonlyArray<[string, string, Reader]> = [
	['found', 'found', flagOrNull],
	['algorithm', 'algorithm', textOrNull],
	['payload', 'payload', textOrNull],
];
const GENERATION_FIELDS: ReadonlyArray<[string, string, Reader]> = [
	['id', 'id', textOrNull],
	['model', 'model', textOrNull],
	['created_at', 'createdAt', textOrNull],
];

function copied(value: unknown, fields: ReadonlyArray<[string, string, Reader]>): IDataObject {
	const source = fieldsOf(value);
	const output: IDataObject = {};
	for (const [apiField, outputField, read] of fields) {
		const fieldValue = read(source[apiField]);
		if (fieldValue !== undefined) output[outputField] = fieldValue;
	}
	return output;
}

export function readVerifyAnswer(context: IExecuteFunctions, itemIndex: number, body: unknown): IDataObject {
	const answer = fieldsOf(body);
	if (typeof fieldsOf(answer.c2pa).present !== 'boolean' || typeof fieldsOf(answer.watermark).found !== 'boolean') {
		throw unusableAnswer(context, itemIndex, body, 'a result: a verify answer needs c2pa.present and watermark.found');
	}
	const json: IDataObject = { c2pa: copied(answer.c2pa, C2PA_FIELDS), watermark: copied(answer.watermark, WATERMARK_FIELDS) };
	// null: the marks name no record this service keeps (or none at all).
	if (answer.generation === null) json.generation = null;
	else if (typeof answer.generation === 'object' && !Array.isArray(answer.generation)) json.generation = copied(answer.generation, GENERATION_FIELDS);
	return json;
}
