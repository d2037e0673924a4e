/**
 * The API reference page (GET /docs, Swagger UI) in the Chromium that npm brings, against the
 * built CLI on loopback (with an admin key, so every route is there). The page is drawn from the
 * running service's own /v1/openapi.json, so the test checks it against that document: every
 * operation is listed under its group with its method and path, each operation shows the key it
 * takes (an API key, the admin key, or none), "Try it out" sends a request the service takes (the
 * operation's own example, not one made up from the schema), and every file comes from the service under its
 * strict Content-Security-Policy without a single violation or error. Screenshot:
 * test-artifacts/docs.png.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startServer, type RunningServer } from '../helpers/server';
import { ARTIFACTS, openBrowser, type Browser } from './support/browser';

let server: RunningServer;
let browser: Browser;
let page: Page;
let document: any;

beforeAll(async () => {
	server = await startServer({ args: ['--admin-key', 'admin-secret-0123456789'] });
	document = await (await fetch(`${server.origin}/v1/openapi.json`)).json();
	browser = await openBrowser({ width: 1280, height: 900 });
	page = browser.page;
	await page.goto(`${server.origin}/docs`);
	await page.locator('.opblock').first().waitFor();
}, 120_000);

afterAll(async () => {
	await browser?.close();
	await server?.stop({ removeData: true });
});

const operations = () =>
	Object.entries(document.paths).flatMap(([path, item]) =>
		Object.entries(item as Record<string, { operationId: string; tags: string[]; security?: Array<Record<string, unknown>> }>).map(([method, operation]) => ({
			path,
			method,
			id: operation.operationId,
			tag: operation.tags[0]!,
			scheme: operation.security ? Object.keys(operation.security[0]!)[0]! : null,
		})),
	);

test('the page and its files come from the service, without a key, under a strict Content-Security-Policy', async () => {
	const response = await fetch(`${server.origin}/docs`);
	expect(response.status).toBe(200);
	const policy = response.headers.get('content-security-policy') ?? '';
	expect(policy).toContain("default-src 'none'");
	expect(policy).toContain("script-src 'self'");
	expect(policy).not.toContain('unsafe');
	expect(response.headers.get('x-content-type-options')).toBe('nosniff');
	const html = await response.text();
	expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
	expect(html).not.toMatch(/https?:\/\//);
	const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((match) => match[1]!);
	expect(scripts.length).toBeGreaterThan(0);
	for (const script of scripts) {
		const served = await fetch(new URL(script, `${server.origin}/docs`));
		expect(served.status).toBe(200);
		expect(served.headers.get('content-security-policy')).toBe(policy);
	}
	expect((await fetch(`${server.origin}/docs/static/..%2F..%2Fpackage.json`)).status).toBe(404);
});

test('every operation of the document is listed under its group, with its method and path', async () => {
	const listed = operations();
	expect(listed.length).toBeGreaterThan(20);
	for (const { path, method, id, tag } of listed) {
		const block = page.locator(`#operations-${tag}-${id}`);
		await expect(block.locator('.opblock-summary-method').textContent()).resolves.toBe(method.toUpperCase());
		await expect(block.locator('.opblock-summary-path').getAttribute('data-path')).resolves.toBe(path);
	}
	expect(await page.locator('.opblock').count()).toBe(listed.length);
	const groups = await page.locator('.opblock-tag').evaluateAll((all) => all.map((each) => each.getAttribute('data-tag')));
	expect(groups).toEqual(document.tags.map((tag: { name: string }) => tag.name));
	const schemas = await page.locator('section.models [data-json-schema-level="0"] > .json-schema-2020-12-head .json-schema-2020-12__title').allTextContents();
	expect(schemas).toEqual(Object.entries(document.components.schemas).map(([name, schema]) => (schema as { title?: string }).title ?? name));
	await page.screenshot({ path: join(ARTIFACTS, 'docs.png') });
});

test('each operation shows the key it takes: the admin key on admin routes and /metrics, an API key on the API, none on public routes', async () => {
	const listed = operations();
	expect(new Set(listed.map(({ scheme }) => scheme))).toEqual(new Set([null, 'apiKey', 'adminKey']));
	for (const { id, tag, scheme } of listed) {
		const lock = page.locator(`#operations-${tag}-${id} .authorization__btn`);
		expect({ id, locks: await lock.count() }).toEqual({ id, locks: scheme ? 1 : 0 });
	}
	const schemeShown = async (tag: string, id: string) => {
		await page.locator(`#operations-${tag}-${id} .authorization__btn`).click();
		const dialog = page.locator('.dialog-ux .modal-ux');
		const names = await dialog.locator('.auth-container h4').allTextContents();
		await dialog.locator('.close-modal').click();
		return names.map((name) => name.trim().split(/\s/)[0]);
	};
	await expect(schemeShown('Operators', 'metrics')).resolves.toEqual(['adminKey']);
	await expect(schemeShown('Operators', 'createKey')).resolves.toEqual(['adminKey']);
	await expect(schemeShown('Images', 'generateImage')).resolves.toEqual(['apiKey']);
	await expect(schemeShown('Agents', 'mcp')).resolves.toEqual(['apiKey']);
});

test('a link to an operation opens the page at that operation, expanded', async () => {
	await page.goto('about:blank');
	await page.goto(`${server.origin}/docs#/Files/uploadFile`);
	const block = page.locator('#operations-Files-uploadFile');
	// The body's frame is drawn before its content: wait for the content, not the frame.
	await block.locator('.opblock-body', { hasText: 'multipart/form-data' }).waitFor();
	await page.locator('#operations-Files-uploadFile').screenshot({ path: join(ARTIFACTS, 'docs-upload.png') });
});

test('"Try it out" works as it comes: the request box holds the first example, and sending it with the API key makes an image', async () => {
	await page.goto('about:blank');
	await page.goto(`${server.origin}/docs#/Images/generateImage`);
	const block = page.locator('#operations-Images-generateImage');
	await block.locator('.authorization__btn').click();
	const dialog = page.locator('.dialog-ux .modal-ux');
	const apiKeyForm = dialog.locator('.auth-container', { hasText: 'apiKey' });
	await apiKeyForm.locator('input').fill(server.apiKey);
	await apiKeyForm.locator('button.authorize').click();
	await dialog.locator('.close-modal').click();
	await block.locator('.try-out__btn').click();
	const requestBox = block.locator('textarea.body-param__text');
	const example = document.paths['/v1/images/generations'].post.requestBody.content['application/json'].examples['p-image'].value;
	expect(JSON.parse(await requestBox.inputValue())).toEqual(example);
	await block.locator('.execute').click();
	const status = block.locator('.live-responses-table tr.response .response-col_status');
	await status.waitFor();
	expect((await status.textContent())?.trim()).toBe('200');
	await block.screenshot({ path: join(ARTIFACTS, 'docs-try-it-out.png') });
});

test('nothing the page did broke its Content-Security-Policy or threw', () => {
	expect(browser.problems).toEqual([]);
});

test('when the document cannot be loaded, the page says so instead of staying blank', async () => {
	await page.route('**/docs/json', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":{}}' }));
	await page.goto('about:blank');
	await page.goto(`${server.origin}/docs`);
	await page.getByText('Failed to load API definition').waitFor();
	expect(await page.locator('.opblock').count()).toBe(0);
});
