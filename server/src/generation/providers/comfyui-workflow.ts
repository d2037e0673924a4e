/**
 * A ComfyUI workflow file in the API format ("Save (API)" / "Export (API)" in ComfyUI): an object
 * of node id → `{ class_type, inputs }`, the body ComfyUI's `POST /prompt` takes as `prompt`. The
 * request reaches it through placeholders: a JSON string value that is exactly `{{prompt}}`,
 * `{{negative_prompt}}`, `{{seed}}`, `{{width}}`, `{{height}}`, `{{image}}` or `{{image_2}}`…
 * is replaced by the request's value, typed: seed, width and height as numbers. ComfyUI would
 * convert "42" for an INT input itself (execution.py `validate_inputs`), but only for inputs a
 * node declares INT or FLOAT; a custom node's untyped input gets the number as it is. The file is
 * read and checked once, at start-up; each refusal names the file and the reason.
 */
import { readFileSync } from 'node:fs';

/** One node of an API-format workflow. */
interface WorkflowNode {
	class_type: string;
	inputs: Record<string, unknown>;
	[other: string]: unknown;
}

export type ApiWorkflow = Record<string, WorkflowNode>;

export interface ComfyWorkflow {
	/** The file it was read from, for messages. */
	path: string;
	nodes: ApiWorkflow;
	/** Ids of its image output nodes (SaveImage, PreviewImage), in the file's order. */
	outputNodes: string[];
	/** How many input images it binds: 0 without `{{image}}`, n with `{{image}}` … `{{image_n}}`. */
	imageInputs: number;
	/** Whether it binds `{{seed}}`: without, its images are drawn with the workflow's own seed, not the request's. */
	bindsSeed: boolean;
}

/** What fills the placeholders of one generation. */
interface WorkflowValues {
	prompt: string;
	negative_prompt: string;
	seed: number;
	width: number;
	height: number;
	/** ComfyUI's names of the uploaded input images, in the request's order. */
	images: string[];
}

/** The nodes ComfyUI writes images with and lists under `outputs` in a prompt's history. */
const IMAGE_OUTPUT_NODES: readonly string[] = ['SaveImage', 'PreviewImage'];

const SCALAR_PLACEHOLDERS = ['prompt', 'negative_prompt', 'seed', 'width', 'height'] as const;
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const WHOLE_PLACEHOLDER = /^\{\{\s*([a-z0-9_]+)\s*\}\}$/;
/** `image`, `image_2`, `image_3` …: the first input image is `image`, as most workflows have one. */
const IMAGE_PLACEHOLDER = /^image(?:_([2-9]|[1-9]\d+))?$/;

/** Reads and checks a workflow file; throws an Error naming the file and what is wrong with it. */
export function loadComfyWorkflow(path: string): ComfyWorkflow {
	let text: string;
	try {
		text = readFileSync(path, 'utf8');
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code;
		throw new Error(`comfyui workflow ${path}: cannot be read (${code === 'ENOENT' ? 'no such file' : (code ?? (error as Error).message)})`);
	}
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (error) {
		throw new Error(`comfyui workflow ${path}: is not JSON (${(error as Error).message})`);
	}
	return checkComfyWorkflow(parsed, path);
}

/** Checks a parsed workflow (see loadComfyWorkflow); `path` names it in messages. */
function checkComfyWorkflow(parsed: unknown, path: string): ComfyWorkflow {
	const refuse = (reason: string): never => {
		throw new Error(`comfyui workflow ${path}: ${reason}`);
	};
	if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) refuse('must be a JSON object of node id → { class_type, inputs } (ComfyUI\'s API format)');
	const object = parsed as Record<string, unknown>;
	if (Array.isArray(object.nodes) && Array.isArray(object.links)) {
		refuse('is in ComfyUI\'s UI format (it has "nodes" and "links"); export it in the API format instead: "Save (API)" in the workflow menu (enable the dev mode options in the settings on older versions)');
	}
	const nodes: ApiWorkflow = {};
	for (const [id, node] of Object.entries(object)) {
		const candidate = node as Partial<WorkflowNode> | null;
		if (typeof candidate !== 'object' || candidate === null || typeof candidate.class_type !== 'string' || typeof candidate.inputs !== 'object' || candidate.inputs === null) {
			refuse(`node "${id}" is not { class_type, inputs } (ComfyUI's API format, "Save (API)")`);
		}
		nodes[id] = candidate as WorkflowNode;
	}
	if (Object.keys(nodes).length === 0) refuse('has no nodes');

	const found = new Set<string>();
	visitStrings(nodes, (value, where) => {
		for (const match of value.matchAll(PLACEHOLDER)) {
			const name = match[1]!;
			if (!isPlaceholder(name)) refuse(`unknown placeholder {{${name}}} at ${where} (known: ${[...SCALAR_PLACEHOLDERS, 'image', 'image_2', '…'].map((each) => `{{${each}}}`).join(', ')})`);
			if (!WHOLE_PLACEHOLDER.test(value)) refuse(`{{${name}}} at ${where} must be the whole string value ("{{${name}}}"), not part of "${value.slice(0, 80)}"`);
			found.add(name);
		}
	});
	if (!found.has('prompt')) refuse('has no {{prompt}}: put "{{prompt}}" as the text of the positive prompt node (e.g. CLIPTextEncode\'s "text")');
	const imageInputs = countImageInputs(found, refuse);
	const outputNodes = Object.keys(nodes).filter((id) => IMAGE_OUTPUT_NODES.includes(nodes[id]!.class_type));
	if (outputNodes.length === 0) refuse(`has no image output node (${IMAGE_OUTPUT_NODES.join(' or ')}), so ComfyUI would report no image`);
	return { path, nodes, outputNodes, imageInputs, bindsSeed: found.has('seed') };
}

function isPlaceholder(name: string): boolean {
	return (SCALAR_PLACEHOLDERS as readonly string[]).includes(name) || IMAGE_PLACEHOLDER.test(name);
}

/** `{{image}}` … `{{image_n}}` without a gap: n. */
function countImageInputs(found: Set<string>, refuse: (reason: string) => never): number {
	const numbers = [...found].map((name) => IMAGE_PLACEHOLDER.exec(name)).filter((match) => match !== null).map((match) => (match[1] === undefined ? 1 : Number(match[1])));
	const count = Math.max(0, ...numbers);
	for (let number = 1; number <= count; number++) {
		if (!numbers.includes(number)) refuse(`uses {{image_${count}}} but not {{${imageName(number)}}}: input images are {{image}}, {{image_2}}, … without a gap`);
	}
	return count;
}

function imageName(number: number): string {
	return number === 1 ? 'image' : `image_${number}`;
}

/** The workflow with its inputs' placeholders replaced: a new object, the loaded one untouched. */
export function bindComfyWorkflow(workflow: ComfyWorkflow, values: WorkflowValues): ApiWorkflow {
	const bound = (name: string): unknown => {
		if (name === 'prompt' || name === 'negative_prompt') return values[name];
		if (name === 'seed' || name === 'width' || name === 'height') return values[name];
		const match = IMAGE_PLACEHOLDER.exec(name)!;
		return values.images[(match[1] === undefined ? 1 : Number(match[1])) - 1];
	};
	const replace = (value: unknown): unknown => {
		if (typeof value === 'string') {
			const match = WHOLE_PLACEHOLDER.exec(value);
			return match ? bound(match[1]!) : value;
		}
		if (Array.isArray(value)) return value.map(replace);
		if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, replace(each)]));
		return value;
	};
	// Only inputs are checked for placeholders, so only inputs are bound (a node's `_meta` title stays as written).
	return Object.fromEntries(Object.entries(workflow.nodes).map(([id, node]) => [id, { ...node, inputs: replace(node.inputs) as WorkflowNode['inputs'] }]));
}

/** Calls `visit` with every string value and where it is (`node "6" inputs.text`). */
function visitStrings(nodes: ApiWorkflow, visit: (value: string, where: string) => void): void {
	const walk = (value: unknown, where: string): void => {
		if (typeof value === 'string') visit(value, where);
		else if (Array.isArray(value)) value.forEach((each, index) => walk(each, `${where}[${index}]`));
		else if (typeof value === 'object' && value !== null) for (const [key, each] of Object.entries(value)) walk(each, where ? `${where}.${key}` : key);
	};
	for (const [id, node] of Object.entries(nodes)) walk(node.inputs, `node "${id}" inputs`);
}
