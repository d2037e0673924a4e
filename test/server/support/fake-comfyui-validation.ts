/**
 * The ComfyUI stand-in's `validate_prompt` (support/fake-comfyui.ts), for the nodes the example
 * workflows use: each input checked as ComfyUI's execution.py `validate_inputs` does it. A constant
 * of an INT or FLOAT input is converted as Python's `int()` / `float()` would (`"42"` is 42), and
 * only one that does not convert is refused, as `invalid_input_type`; then its `min` and `max`; a
 * list input (a model file, an input image) must name one of its values. The inputs' types and
 * bounds are those the nodes declare in ComfyUI's nodes.py (`INPUT_TYPES`); a node the table does
 * not know is taken as it is, as are links (`[node id, output index]`).
 */

/** One of ComfyUI's reasons in `node_errors[id].errors`. */
export interface ComfyReason {
	type: string;
	message: string;
	details: string;
	extra_info: Record<string, unknown>;
}

type InputSpec = { type: 'INT' | 'FLOAT'; min: number; max: number } | { type: 'STRING' } | { type: 'LIST'; values: () => readonly string[] };

/** What the stand-in has on disk: the model files its loaders list and the uploaded input images. */
export interface ComfyFiles {
	models: readonly string[];
	inputs: () => readonly string[];
}

// nodes.py: MAX_RESOLUTION = 16384; seeds are 0 … 0xffffffffffffffff.
const MAX_RESOLUTION = 16384;
const SEED = { type: 'INT', min: 0, max: 0xffffffffffffffff } as const;
const SIDE = { type: 'INT', min: 16, max: MAX_RESOLUTION } as const;
const STRING = { type: 'STRING' } as const;

function nodeInputs(files: ComfyFiles): Record<string, Record<string, InputSpec>> {
	const latent = { width: SIDE, height: SIDE, batch_size: { type: 'INT', min: 1, max: 4096 } } as const;
	return {
		KSampler: { seed: SEED, steps: { type: 'INT', min: 1, max: 10000 }, cfg: { type: 'FLOAT', min: 0, max: 100 }, denoise: { type: 'FLOAT', min: 0, max: 1 } },
		RandomNoise: { noise_seed: SEED },
		EmptyLatentImage: latent,
		EmptySD3LatentImage: latent,
		ImageScale: { width: { type: 'INT', min: 0, max: MAX_RESOLUTION }, height: { type: 'INT', min: 0, max: MAX_RESOLUTION } },
		CLIPTextEncode: { text: STRING },
		SaveImage: { filename_prefix: STRING },
		CheckpointLoaderSimple: { ckpt_name: { type: 'LIST', values: () => files.models } },
		LoadImage: { image: { type: 'LIST', values: files.inputs } },
	};
}

/** Python's `str()` of a JSON value, for ComfyUI's messages ("None", "True", a number as Python prints it). */
export function pythonText(value: unknown): string {
	if (value === null || value === undefined) return 'None';
	if (typeof value === 'boolean') return value ? 'True' : 'False';
	if (typeof value === 'string') return value;
	if (typeof value === 'number') return String(value);
	return JSON.stringify(value);
}

function pythonTypeName(value: unknown): string {
	if (value === null || value === undefined) return 'NoneType';
	if (Array.isArray(value)) return 'list';
	return typeof value === 'object' ? 'dict' : typeof value;
}

/** Python's `int(value)` of a JSON value: the number, or the message of the exception it raises. */
export function pythonInt(value: unknown): { value: number } | { error: string } {
	if (typeof value === 'boolean') return { value: value ? 1 : 0 };
	if (typeof value === 'number') {
		if (Number.isNaN(value)) return { error: 'cannot convert float NaN to integer' };
		if (!Number.isFinite(value)) return { error: 'cannot convert float infinity to integer' };
		return { value: Math.trunc(value) };
	}
	if (typeof value === 'string') {
		// int() takes surrounding whitespace, a sign, and digits with single underscores between them.
		const text = value.trim();
		if (/^[+-]?\d+(?:_\d+)*$/.test(text)) return { value: Number(text.replaceAll('_', '')) };
		return { error: `invalid literal for int() with base 10: '${value}'` };
	}
	return { error: `int() argument must be a string, a bytes-like object or a real number, not '${pythonTypeName(value)}'` };
}

/** Python's `float(value)` of a JSON value. */
export function pythonFloat(value: unknown): { value: number } | { error: string } {
	if (typeof value === 'boolean') return { value: value ? 1 : 0 };
	if (typeof value === 'number') return { value };
	if (typeof value === 'string') {
		const text = value.trim().replaceAll(/(?<=\d)_(?=\d)/g, '');
		if (/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) return { value: Number(text) };
		if (/^[+-]?(?:inf|infinity)$/i.test(text)) return { value: text.startsWith('-') ? -Infinity : Infinity };
		if (/^[+-]?nan$/i.test(text)) return { value: Number.NaN };
		return { error: `could not convert string to float: '${value}'` };
	}
	return { error: `float() argument must be a string or a real number, not '${pythonTypeName(value)}'` };
}

/**
 * One constant input checked as validate_inputs does: converted (the inputs are changed to the
 * converted value, as ComfyUI runs them), or the reason it is refused.
 */
function checkInput(inputs: Record<string, unknown>, name: string, spec: InputSpec): ComfyReason | undefined {
	const value = inputs[name];
	if (value === undefined) return { type: 'required_input_missing', message: 'Required input is missing', details: name, extra_info: { input_name: name } };
	// A link to another node's output: its type is the linked node's to answer for.
	if (Array.isArray(value)) return undefined;
	if (spec.type === 'STRING') {
		inputs[name] = pythonText(value);
		return undefined;
	}
	if (spec.type === 'LIST') {
		const values = spec.values();
		if (values.includes(value as string)) return undefined;
		return { type: 'value_not_in_list', message: 'Value not in list', details: `${name}: '${pythonText(value)}' not in ${JSON.stringify(values)}`, extra_info: { input_name: name, received_value: value } };
	}
	const converted = spec.type === 'INT' ? pythonInt(value) : pythonFloat(value);
	if ('error' in converted) {
		return {
			type: 'invalid_input_type',
			message: `Failed to convert an input value to a ${spec.type} value`,
			details: `${name}, ${pythonText(value)}, ${converted.error}`,
			extra_info: { input_name: name, received_value: value, exception_message: converted.error },
		};
	}
	inputs[name] = converted.value;
	if (converted.value < spec.min) return { type: 'value_smaller_than_min', message: `Value ${converted.value} smaller than min of ${spec.min}`, details: name, extra_info: { input_name: name, received_value: converted.value } };
	if (converted.value > spec.max) return { type: 'value_bigger_than_max', message: `Value ${converted.value} bigger than max of ${spec.max}`, details: name, extra_info: { input_name: name, received_value: converted.value } };
	return undefined;
}

/**
 * LoadImage's own check (nodes.py `LoadImage.VALIDATE_INPUTS`): a file not in the input folder is
 * "Invalid image file", reported as validate_inputs words a node's custom check.
 */
function loadImageReason(inputs: Record<string, unknown>, files: ComfyFiles): ComfyReason | undefined {
	const name = inputs.image;
	if (Array.isArray(name) || files.inputs().includes(name as string)) return undefined;
	return { type: 'custom_validation_failed', message: 'Custom validation failed for node', details: `image - Invalid image file: ${pythonText(name)}`, extra_info: { input_name: 'image', received_value: name } };
}

/** The reasons each node is refused for (none when valid); converts the workflow's inputs in place. */
export function validateComfyWorkflow(workflow: Record<string, { class_type: string; inputs: Record<string, unknown> }>, files: ComfyFiles): Record<string, ComfyReason[]> {
	const specs = nodeInputs(files);
	const refused: Record<string, ComfyReason[]> = {};
	for (const [id, node] of Object.entries(workflow)) {
		const inputs = node.inputs ?? {};
		const reasons: ComfyReason[] = [];
		for (const [name, spec] of Object.entries(specs[node.class_type] ?? {})) {
			// LoadImage validates its image itself, as "Invalid image file", not by the list.
			if (node.class_type === 'LoadImage' && name === 'image') continue;
			const reason = checkInput(inputs, name, spec);
			if (reason) reasons.push(reason);
		}
		if (node.class_type === 'LoadImage') {
			const reason = loadImageReason(inputs, files);
			if (reason) reasons.push(reason);
		}
		if (reasons.length > 0) refused[id] = reasons;
	}
	return refused;
}
