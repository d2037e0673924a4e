// The API reference, drawn from the service's own OpenAPI document. Everything is built with DOM
// calls (no innerHTML), so no text of the document can become markup, and the page needs no
// inline script or style under its Content-Security-Policy.
import { constraints, fields, operationsByTag, refName, resolve, typeText, variants } from './schema-text.js';

const DOCUMENT_URL = '/v1/openapi.json';

/** An element with attributes and children; strings become text nodes. */
function h(tag, attributes = {}, ...children) {
	const element = document.createElement(tag);
	for (const [name, value] of Object.entries(attributes)) if (value !== undefined && value !== false) element.setAttribute(name, value === true ? '' : value);
	element.append(...children.flat(Infinity).filter((child) => child !== undefined && child !== null));
	return element;
}

/** Text whose `backticked` parts are code. */
function prose(text) {
	return String(text ?? '').split('`').map((part, index) => (index % 2 === 1 ? h('code', {}, part) : part));
}

const schemaLink = (name) => h('a', { href: `#schema-${name}` }, name);

function fieldTable(doc, schema) {
	const rows = fields(doc, schema);
	if (rows.length === 0) return h('p', { class: 'hint' }, 'Any JSON: ', typeText(schema), '.');
	return h(
		'table',
		{ class: 'fields' },
		h('thead', {}, h('tr', {}, h('th', {}, 'Field'), h('th', {}, 'Type'), h('th', {}, 'Rules'), h('th', {}, 'Description'))),
		h(
			'tbody',
			{},
			rows.map((row) =>
				h(
					'tr',
					{ 'data-field': row.name },
					h('td', {}, h('code', {}, row.name), row.required ? h('span', { class: 'required', title: 'required' }, 'required') : undefined),
					h('td', {}, row.ref ? [row.type.replace(row.ref, ''), schemaLink(row.ref)] : row.type),
					h('td', { class: 'rules' }, row.rules.map((rule) => h('span', {}, rule))),
					h('td', {}, prose(row.description)),
				),
			),
		),
	);
}

function schemaBlock(doc, schema) {
	const options = variants(doc, schema);
	if (options.length === 0) {
		const name = refName(schema);
		const description = resolve(doc, schema).description;
		return h('div', {}, name ? h('p', { class: 'schema-name' }, schemaLink(name)) : undefined, description ? h('p', {}, prose(description)) : undefined, fieldTable(doc, schema));
	}
	return h(
		'div',
		{ class: 'variants' },
		h('p', { class: 'hint' }, 'One of these shapes', options[0].discriminator ? [', chosen by ', h('code', {}, options[0].discriminator.property)] : '', ':'),
		options.map((option, index) =>
			h(
				'details',
				{ open: index === 0, 'data-variant': option.discriminator?.value ?? option.name },
				h('summary', {}, option.discriminator ? h('code', {}, `${option.discriminator.property}: "${option.discriminator.value}"`) : undefined, ' ', option.title, ' ', schemaLink(option.name)),
				fieldTable(doc, option.schema),
			),
		),
	);
}

function parameterTable(parameters) {
	return h(
		'table',
		{ class: 'fields' },
		h('thead', {}, h('tr', {}, h('th', {}, 'Parameter'), h('th', {}, 'In'), h('th', {}, 'Type'), h('th', {}, 'Rules'), h('th', {}, 'Description'))),
		h(
			'tbody',
			{},
			parameters.map((parameter) =>
				h(
					'tr',
					{ 'data-parameter': parameter.name },
					h('td', {}, h('code', {}, parameter.name), parameter.required ? h('span', { class: 'required' }, 'required') : undefined),
					h('td', {}, parameter.in),
					h('td', {}, typeText(parameter.schema)),
					h('td', { class: 'rules' }, constraints(parameter.schema).map((rule) => h('span', {}, rule))),
					h('td', {}, prose(parameter.description ?? parameter.schema?.description)),
				),
			),
		),
	);
}

function responseTable(responses) {
	return h(
		'table',
		{ class: 'responses' },
		h('thead', {}, h('tr', {}, h('th', {}, 'Status'), h('th', {}, 'Meaning'), h('th', {}, 'Body'))),
		h(
			'tbody',
			{},
			Object.entries(responses).map(([status, response]) => {
				const content = Object.entries(response.content ?? {});
				return h(
					'tr',
					{ 'data-status': status, class: `status-${status[0]}xx` },
					h('td', {}, h('code', {}, status)),
					h('td', {}, prose(response.description)),
					h('td', {}, content.map(([type, media]) => h('div', {}, h('code', {}, type), media.schema ? [' ', refName(media.schema) ? schemaLink(refName(media.schema)) : typeText(media.schema)] : ''))),
				);
			}),
		),
	);
}

function operationCard(doc, { path, method, operation }) {
	const body = operation.requestBody;
	return h(
		'section',
		{ class: 'operation card', id: operation.operationId },
		h('h3', {}, h('span', { class: `method ${method}` }, method.toUpperCase()), ' ', h('code', { class: 'path' }, path), operation.security?.length ? h('span', { class: 'lock', title: 'Authorization: Bearer <key>' }, 'API key') : undefined),
		h('p', {}, prose(operation.summary)),
		operation.description ? h('p', { class: 'hint' }, prose(operation.description)) : undefined,
		operation.parameters?.length ? [h('h4', {}, 'Parameters'), parameterTable(operation.parameters)] : undefined,
		body
			? [
					h('h4', {}, 'Request body', body.required ? '' : ' (optional)'),
					Object.entries(body.content ?? {}).map(([type, media]) => h('div', { class: 'body', 'data-content-type': type }, h('p', {}, h('code', {}, type)), schemaBlock(doc, media.schema))),
				]
			: undefined,
		h('h4', {}, 'Responses'),
		responseTable(operation.responses ?? {}),
	);
}

function render(doc) {
	const groups = operationsByTag(doc);
	const schemes = Object.entries(doc.components?.securitySchemes ?? {});
	document.title = `${doc.info?.title ?? 'API'} · reference`;
	$('#title').textContent = doc.info?.title ?? 'API';
	$('#version').textContent = doc.info?.version ? `v${doc.info.version}` : '';
	$('#nav').replaceChildren(
		...groups.map((group) => h('div', {}, h('a', { class: 'group', href: `#tag-${group.name}` }, group.name), h('ul', {}, group.operations.map(({ path, method, operation }) => h('li', {}, h('a', { href: `#${operation.operationId}` }, h('span', { class: `method ${method}` }, method.toUpperCase()), ' ', path)))))),
		h('div', {}, h('a', { class: 'group', href: '#schemas' }, 'Schemas')),
	);
	$('#content').replaceChildren(
		h(
			'section',
			{ class: 'card intro' },
			h('p', {}, prose(doc.info?.description)),
			schemes.map(([, scheme]) => h('p', { class: 'hint' }, h('strong', {}, 'Authentication: '), `${scheme.type} ${scheme.scheme ?? ''} `, h('code', {}, 'Authorization: Bearer <key>'), scheme.description ? ` (${scheme.description})` : '')),
			h('p', { class: 'hint' }, 'The machine-readable document: ', h('a', { href: DOCUMENT_URL }, DOCUMENT_URL)),
		),
		...groups.map((group) => h('section', { class: 'group', id: `tag-${group.name}` }, h('h2', {}, group.name), group.description ? h('p', { class: 'hint' }, prose(group.description)) : undefined, group.operations.map((entry) => operationCard(doc, entry)))),
		h(
			'section',
			{ class: 'group', id: 'schemas' },
			h('h2', {}, 'Schemas'),
			Object.entries(doc.components?.schemas ?? {}).map(([name, schema]) => h('section', { class: 'card schema', id: `schema-${name}` }, h('h3', {}, name), schema.title && schema.title !== name ? h('p', {}, schema.title) : undefined, schemaBlock(doc, schema))),
		),
	);
	document.body.dataset.ready = 'true';
	// The page was drawn after load: honour a #fragment the reader came with.
	if (location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
}

function $(selector) {
	return document.querySelector(selector);
}

async function start() {
	try {
		const response = await fetch(DOCUMENT_URL, { headers: { accept: 'application/json' } });
		if (!response.ok) throw new Error(`${DOCUMENT_URL} answered ${response.status}`);
		render(await response.json());
	} catch (error) {
		$('#content').replaceChildren(h('section', { class: 'card' }, h('p', { class: 'error', role: 'alert' }, `The API document could not be loaded: ${error.message}`)));
		document.body.dataset.ready = 'error';
	}
}

start();
