/**
 * The nodes' codex files may only use n8n's categories for community nodes, spelled exactly
 * (https://docs.n8n.io/integrations/creating-nodes/build/reference/node-codex-files/): n8n files
 * a node under an unknown category nowhere in the nodes panel.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const N8N_CATEGORIES = [
	'Data & Storage',
	'Finance & Accounting',
	'Marketing & Content',
	'Productivity',
	'Miscellaneous',
	'Sales',
	'Development',
	'Analytics',
	'Communication',
	'Utility',
];

const nodesDir = path.join(__dirname, '../../nodes');
const codexFiles = readdirSync(nodesDir, { withFileTypes: true })
	.filter((entry) => entry.isDirectory())
	.flatMap((entry) => readdirSync(path.join(nodesDir, entry.name)).filter((file) => file.endsWith('.node.json')).map((file) => path.join(nodesDir, entry.name, file)));

test('there is a codex file for each node', () => {
	expect(codexFiles.map((file) => path.basename(file)).sort()).toEqual(['ImageGen.node.json', 'ImageGenUpload.node.json']);
});

test.each(codexFiles.map((file) => [path.basename(file), file]))('%s uses only n8n’s community categories', (_, file) => {
	const codex = JSON.parse(readFileSync(file, 'utf8')) as { categories: string[]; subcategories?: Record<string, string[]> };
	expect(codex.categories.length).toBeGreaterThan(0);
	for (const category of codex.categories) expect(N8N_CATEGORIES).toContain(category);
	for (const key of Object.keys(codex.subcategories ?? {})) expect(codex.categories).toContain(key);
});
