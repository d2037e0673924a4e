/**
 * The README is what n8n users see on npm: a short start whose first screen is the two set-up
 * commands, with everything else on the pages in docs/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const readme = readFileSync(path.join(__dirname, '../../README.md'), 'utf8');

test('the README stays a short start: at most 200 lines', () => {
	expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(200);
});

test('the README opens with the two set-up commands', () => {
	const firstScreen = readme.split('\n').slice(0, 10).join('\n');
	expect(firstScreen).toMatch(/^npm ci && npm start +# /m);
	expect(firstScreen).toMatch(/^npm ci && npm test +# /m);
});
