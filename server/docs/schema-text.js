// How a JSON Schema of the OpenAPI document reads as text: pure functions, no DOM, so the page
// (docs.js) only arranges what these return.

const COMPONENT = '#/components/schemas/';

/** The component name a schema points at, if it is a reference. */
export function refName(schema) {
	return typeof schema?.$ref === 'string' && schema.$ref.startsWith(COMPONENT) ? schema.$ref.slice(COMPONENT.length) : undefined;
}

/** The schema itself, with a reference followed (one level: components do not chain). */
export function resolve(doc, schema) {
	const name = refName(schema);
	return name === undefined ? schema ?? {} : doc.components?.schemas?.[name] ?? {};
}

/** A short type, e.g. "string (uri)", "array of string", "GenerationResponse", "string or null". */
export function typeText(schema) {
	if (!schema || typeof schema !== 'object') return 'any';
	const name = refName(schema);
	if (name !== undefined) return name;
	if ('const' in schema) return JSON.stringify(schema.const);
	const choices = schema.oneOf ?? schema.anyOf;
	if (Array.isArray(choices)) return choices.map(typeText).join(' or ');
	if (Array.isArray(schema.type)) return schema.type.join(' or ');
	if (schema.type === 'array') return `array of ${typeText(schema.items)}`;
	if (schema.type === undefined) return schema.properties ? 'object' : 'any';
	return schema.format ? `${schema.type} (${schema.format})` : schema.type;
}

const count = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The rules a value must keep, each as a phrase: enum, bounds, lengths, pattern, default. */
export function constraints(schema) {
	if (!schema || typeof schema !== 'object') return [];
	const rules = [];
	if (Array.isArray(schema.enum)) rules.push(`one of ${schema.enum.map((value) => JSON.stringify(value)).join(', ')}`);
	if (schema.minimum !== undefined) rules.push(`≥ ${schema.minimum}`);
	if (schema.maximum !== undefined) rules.push(`≤ ${schema.maximum}`);
	if (schema.minLength !== undefined) rules.push(`at least ${count(schema.minLength, 'character')}`);
	if (schema.maxLength !== undefined) rules.push(`at most ${count(schema.maxLength, 'character')}`);
	if (schema.minItems !== undefined) rules.push(`at least ${count(schema.minItems, 'item')}`);
	if (schema.maxItems !== undefined) rules.push(`at most ${count(schema.maxItems, 'item')}`);
	if (schema.pattern !== undefined) rules.push(`matches ${schema.pattern}`);
	if (schema.default !== undefined) rules.push(`default ${JSON.stringify(schema.default)}`);
	for (const choice of schema.oneOf ?? schema.anyOf ?? []) {
		for (const rule of constraints(choice)) rules.push(`${typeText(choice)}: ${rule}`);
	}
	if (schema.type === 'array' && schema.items && refName(schema.items) === undefined) {
		for (const rule of constraints(schema.items)) rules.push(`each: ${rule}`);
	}
	return rules;
}

/**
 * The fields of an object schema as rows, nested objects (and objects in arrays) flattened into
 * dotted names: "error.message", "data[].url". References to components stay links (no flattening),
 * so a row never repeats a component the page shows on its own.
 */
export function fields(doc, schema, prefix = '') {
	const object = prefix === '' ? resolve(doc, schema) : schema;
	const required = new Set(object.required ?? []);
	const rows = [];
	for (const [name, property] of Object.entries(object.properties ?? {})) {
		const path = `${prefix}${name}`;
		rows.push({ name: path, required: required.has(name), type: typeText(property), ref: refName(property) ?? refName(property.items), rules: constraints(property), description: property.description ?? '' });
		if (property.properties) rows.push(...fields(doc, property, `${path}.`));
		else if (property.type === 'array' && property.items?.properties) rows.push(...fields(doc, property.items, `${path}[].`));
	}
	return rows;
}

/**
 * The alternatives of a body that is one of several shapes (the generation request: one per
 * model), each with the discriminator's value when there is one; none for a plain object.
 */
export function variants(doc, schema) {
	const whole = resolve(doc, schema);
	if (!Array.isArray(whole.oneOf) || !whole.oneOf.every((choice) => refName(choice) !== undefined)) return [];
	const by = whole.discriminator?.propertyName;
	const valueOf = Object.fromEntries(Object.entries(whole.discriminator?.mapping ?? {}).map(([value, target]) => [target, value]));
	return whole.oneOf.map((choice) => {
		const variant = resolve(doc, choice);
		return { name: refName(choice), title: variant.title ?? refName(choice), discriminator: by && valueOf[choice.$ref] !== undefined ? { property: by, value: valueOf[choice.$ref] } : undefined, schema: choice };
	});
}

/** Every operation, in the order of the document's tags, then of its paths. */
export function operationsByTag(doc) {
	const groups = new Map((doc.tags ?? []).map((tag) => [tag.name, { ...tag, operations: [] }]));
	for (const [path, item] of Object.entries(doc.paths ?? {})) {
		for (const [method, operation] of Object.entries(item)) {
			const name = operation.tags?.[0] ?? 'Other';
			if (!groups.has(name)) groups.set(name, { name, description: '', operations: [] });
			groups.get(name).operations.push({ path, method, operation });
		}
	}
	return [...groups.values()].filter((group) => group.operations.length > 0);
}
