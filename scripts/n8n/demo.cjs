// The credential and the demo workflow (generate → edit → upload) that `npm start` imports and
// the browser test opens. Parameter names are the nodes' public names (docs/nodes.md): saved workflows depend on them.
'use strict';

const CREDENTIAL_ID = 'imageGenLocal001';
const CREDENTIAL_NAME = 'ImageGen (local server)';
const DEMO_WORKFLOW_ID = 'imageGenDemo0001';
const IMAGE_GEN = 'n8n-nodes-imagegen.imageGen';
const IMAGE_GEN_UPLOAD = 'n8n-nodes-imagegen.imageGenUpload';

/** n8n's import format; `data` is stored encrypted by `n8n import:credentials`. */
function credentialFile({ apiKey, baseUrl, id = CREDENTIAL_ID, name = CREDENTIAL_NAME }) {
	return [{ id, name, type: 'imageGenApi', data: { apiKey, baseUrl } }];
}

const credentialReference = { imageGenApi: { id: CREDENTIAL_ID, name: CREDENTIAL_NAME } };

function node(name, type, parameters, position, extra = {}) {
	return { id: `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`, name, type, typeVersion: 1, position, parameters, ...extra };
}

function imageGenNode(name, parameters, position, extra) {
	return node(name, IMAGE_GEN, parameters, position, { credentials: credentialReference, ...extra });
}

function uploadNode(name, parameters, position, extra) {
	return node(name, IMAGE_GEN_UPLOAD, parameters, position, { credentials: credentialReference, ...extra });
}

function trigger() {
	return node('Start', 'n8n-nodes-base.manualTrigger', {}, [0, 0]);
}

/** Connects each [from, to] pair on main output 0 → input 0. */
function connect(pairs) {
	const connections = {};
	for (const [from, to] of pairs) {
		connections[from] ??= { main: [[]] };
		connections[from].main[0].push({ node: to, type: 'main', index: 0 });
	}
	return connections;
}

function workflow({ id, name, nodes, connections }) {
	return { id, name, active: false, nodes, connections, settings: { executionOrder: 'v1' }, pinData: {} };
}

function demoWorkflow() {
	return workflow({
		id: DEMO_WORKFLOW_ID,
		name: 'ImageGen demo: generate, edit, upload',
		nodes: [
			trigger(),
			imageGenNode(
				'Generate',
				{ model: 'p-image', prompt: 'A lighthouse on a cliff at sunset, watercolor', aspectRatio: '16:9', outputFormat: 'png', responseFormat: 'url' },
				[240, 0],
			),
			imageGenNode(
				'Edit',
				{
					model: 'p-image-edit',
					prompt: 'Make it a snowy winter night',
					images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] },
					aspectRatio: '16:9',
					outputFormat: 'png',
					responseFormat: 'url',
				},
				[480, 0],
			),
			uploadNode('Upload', { inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'webp' }, [720, 0]),
		],
		connections: connect([
			['Start', 'Generate'],
			['Generate', 'Edit'],
			['Edit', 'Upload'],
		]),
	});
}

module.exports = {
	CREDENTIAL_ID,
	CREDENTIAL_NAME,
	DEMO_WORKFLOW_ID,
	IMAGE_GEN,
	IMAGE_GEN_UPLOAD,
	connect,
	credentialFile,
	demoWorkflow,
	imageGenNode,
	node,
	trigger,
	uploadNode,
	workflow,
};
