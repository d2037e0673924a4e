/**
 * The API reference page (GET /docs) in the Chromium that npm brings, against the built CLI on
 * loopback. The page is drawn from the running service's own /v1/openapi.json, so the test checks
 * it against that document: every operation and schema is on the page, each model's generation
 * body shows its own fields and limits, and a limit the operator set (the retention) shows as set.
 * The page must run under its Content-Security-Policy without a single violation, and say so
 * plainly when the document cannot be loaded. Screenshot: test-artifacts/docs.png.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { MODEL_IDS, PROMPT_MAX_LENGTH } from '../../core/models';
import { startServer, type RunningServer } from '../helpers/server';
import { ARTIFACTS, openBrowser, type Browser } from './support/browser';

const RETENTION_SECONDS = 3600;

let server: RunningServer;
let browser: Browser;
let page: Page;
let document: any;

beforeAll(async () => {
	server = await startServer({ args: ['--retention-seconds', String(RETENTION_SECONDS)] });
	document = await (await fetch(`${server.origin}/v1/openapi.json`)).json();
	browser = await openBrowser({ width: 1280, height: 900 });
	page = browser.page;
	await page.goto(`${server.origin}/docs`);
	await page.locator('body[data-ready=true]').waitFor();
}, 120_000);

afterAll(async () => {
	await browser?.close();
	await server?.stop({ removeData: true });
});

const operations = () =>
	Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item as Record<string, { operationId: string }>).map(([method, operation]) => ({ path, method, id: operation.operationId })));

test('the page and its assets come from the service, without a key, under a strict Content-Security-Policy', async () => {
	const response = await fetch(`${server.origin}/docs`);
	expect(response.status).toBe(200);
	const policy = response.headers.get('content-security-policy') ?? '';
	expect(policy).toContain("script-src 'self'");
	expect(policy).not.toContain('unsafe');
	const html = await response.text();
	expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
	expect(html).not.toMatch(/https?:\/\//);
	for (const asset of ['docs.js', 'schema-text.js', 'docs.css']) {
		const served = await fetch(`${server.origin}/docs/assets/${asset}`);
		expect(served.status).toBe(200);
		expect((await fetch(`${server.origin}/docs/assets/${asset}`, { headers: { 'if-none-match': served.headers.get('etag')! } })).status).toBe(304);
	}
	expect((await fetch(`${server.origin}/docs/assets/..%2Fpackage.json`)).status).toBe(404);
	expect((await fetch(`${server.origin}/docs/assets/index.html`)).status).toBe(404);
});

test('every operation of the document has its section, with method, path and a link from the side bar', async () => {
	const listed = operations();
	expect(listed.length).toBeGreaterThan(20);
	for (const { path, method, id } of listed) {
		const section = page.locator(`section.operation#${id}`);
		await expect(section.locator('h3').textContent()).resolves.toBe(`${method.toUpperCase()} ${path}${document.paths[path][method].security ? 'API key' : ''}`);
		expect(await page.locator(`#nav a[href="#${id}"]`).count()).toBe(1);
	}
	expect(await page.locator('section.operation').count()).toBe(listed.length);
	for (const name of Object.keys(document.components.schemas)) expect(await page.locator(`section.schema[id="schema-${name}"]`).count()).toBe(1);
});

test("the generation body shows one shape per model, each with that model's own fields and limits", async () => {
	const body = page.locator('#generateImage [data-content-type="application/json"]');
	const shapes = await body.locator('details[data-variant]').evaluateAll((all) => all.map((each) => each.getAttribute('data-variant')));
	expect(shapes).toEqual([...MODEL_IDS]);
	const shape = (model: string) => body.locator(`details[data-variant="${model}"]`);
	expect(await shape('textimage-v2').locator('tr[data-field=negative_prompt]').count()).toBe(1);
	expect(await shape('p-image').locator('tr[data-field=negative_prompt]').count()).toBe(0);
	expect(await shape('p-image-edit').locator('tr[data-field=images] .required').count()).toBe(1);
	await expect(shape('p-image').locator('tr[data-field=prompt] .rules').textContent()).resolves.toContain(`at most ${PROMPT_MAX_LENGTH} characters`);
	await expect(shape('p-image-edit').locator('tr[data-field=images] .rules').textContent()).resolves.toContain('at most 10 items');
});

test('limits are the running service\'s own, and the error shape is spelled out', async () => {
	const expiresIn = page.locator('#schema-UploadJsonRequest tr[data-field=expires_in] .rules');
	await expect(expiresIn.textContent()).resolves.toContain(`≤ ${RETENTION_SECONDS}`);
	const error = page.locator('#schema-Error');
	for (const field of ['error.message', 'error.type', 'error.param', 'error.code']) {
		expect(await error.locator(`tr[data-field="${field}"] .required`).count()).toBe(1);
	}
	expect(await page.locator('#uploadFile [data-content-type]').evaluateAll((all) => all.map((each) => each.getAttribute('data-content-type')))).toEqual(['application/json', 'multipart/form-data']);
	await page.screenshot({ path: join(ARTIFACTS, 'docs.png') });
	await page.locator('#generateImage').screenshot({ path: join(ARTIFACTS, 'docs-generation.png') });
});

test('a link to an operation opens the page at that operation', async () => {
	await page.goto(`${server.origin}/docs#uploadFile`);
	await page.locator('body[data-ready=true]').waitFor();
	await expect(page.locator('#uploadFile').isVisible()).resolves.toBe(true);
	const top = await page.locator('#uploadFile').evaluate((element) => element.getBoundingClientRect().top);
	expect(top).toBeLessThan(200);
});

test('nothing the page did broke its Content-Security-Policy or threw', () => {
	expect(browser.problems).toEqual([]);
});

test('when the document cannot be loaded, the page says so instead of staying blank', async () => {
	await page.route('**/v1/openapi.json', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":{}}' }));
	await page.goto(`${server.origin}/docs`);
	await page.locator('body[data-ready=error]').waitFor();
	await expect(page.locator('[role=alert]').textContent()).resolves.toMatch(/could not be loaded: \/v1\/openapi\.json answered 503/);
});
