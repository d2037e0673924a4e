/**
 * What a user sees in the n8n editor: Chromium (the build inside the npm package
 * @sparticuz/chromium, so `npm ci` brings it) opens the demo workflow's ImageGen node and switches
 * the model; the fields and aspect ratios must follow the model. One screenshot per model goes to
 * test-artifacts/. The browser may only talk to loopback.
 */
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { ARTIFACTS, openBrowser, type Browser } from './support/browser';
import { demo, freePort, INSTALL_TIMEOUT_MS, openSession, startEditor, type Editor, type Session } from './support/n8n';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { setUpOwner } = require('../../scripts/n8n/owner.cjs') as {
	setUpOwner(url: string, login: { email: string; password: string }): Promise<boolean>;
};

const LOGIN = { email: 'editor-test@imagegen.example', password: 'Editor-test-password-1' };

let session: Session;
let editor: Editor;
let browser: Browser;
let page: Page;

beforeAll(async () => {
	session = await openSession('editor');
	await session.importWorkflows([demo.demoWorkflow()]);
	editor = await startEditor(session.n8n, { userFolder: session.userFolder, port: await freePort() });
	await setUpOwner(editor.url, LOGIN);
	browser = await openBrowser({ width: 1440, height: 1000 });
	page = browser.page;
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await browser?.close();
	await editor?.stop();
	await session?.close();
});

/** n8n's log goes into the failure message: a broken editor is diagnosed from it. */
async function withEditorLog<T>(work: () => Promise<T>): Promise<T> {
	try {
		return await work();
	} catch (error) {
		const log = editor.output().split('\n').slice(-60).join('\n');
		throw new Error(`${(error as Error).message}\n--- n8n log (last lines) ---\n${log}`);
	}
}

function parameter(name: string) {
	return page.locator(`[data-test-id="node-parameters"] [data-test-id="parameter-input-${name}"]`);
}

/** Waits for the editor to settle after a change, then checks what is on screen. */
async function expectShown(locator: Locator, shown: boolean): Promise<void> {
	await locator.first().waitFor({ state: shown ? 'visible' : 'hidden', timeout: 5_000 }).catch(() => undefined);
	expect(await locator.first().isVisible()).toBe(shown);
}

async function visibleDropdownOptions() {
	const options = page.locator('.el-select-dropdown__item:visible, .el-select-dropdown__option-item:visible');
	await options.first().waitFor();
	return options;
}

async function chooseModel(model: string): Promise<void> {
	await parameter('model').click();
	const options = await visibleDropdownOptions();
	// An option's text is its name followed directly by its description; `p-image` must not pick
	// `p-image-edit`, so the name may not continue with a dash.
	await options.filter({ hasText: new RegExp(`^\\s*${model.replace(/-/g, '\\-')}(?!-)`) }).first().click();
	await options.first().waitFor({ state: 'hidden' });
}

async function aspectRatioCount(): Promise<number> {
	await parameter('aspectRatio').click();
	const count = await (await visibleDropdownOptions()).count();
	await page.keyboard.press('Escape');
	await page.locator('.el-select-dropdown__item:visible').first().waitFor({ state: 'hidden' }).catch(() => undefined);
	return count;
}

test('signs in and opens the ImageGen node of the demo workflow', async () => {
	await withEditorLog(async () => {
		await page.goto(`${editor.url}/signin`);
		await page.locator('input[type="email"], input[name="emailOrLdapLoginId"], input[name="email"]').first().fill(LOGIN.email);
		await page.locator('input[type="password"]').first().fill(LOGIN.password);
		await page.getByRole('button', { name: /sign in/i }).click();
		await page.waitForURL((url) => !url.pathname.startsWith('/signin'), { timeout: 30_000 });
		await page.goto(`${editor.url}/workflow/${demo.DEMO_WORKFLOW_ID}`);
		const node = page.locator('[data-node-name="Generate"]').first();
		await node.waitFor({ timeout: 30_000 });
		await node.dblclick();
		await parameter('model').waitFor({ timeout: 15_000 });
	});
});

const expectations = [
	{ model: 'p-image', images: false, textimage: false, ratios: 7 },
	{ model: 'p-image-edit', images: true, textimage: false, ratios: 8 }, // Match Input Image and the seven ratios
	{ model: 'textimage-v2', images: false, textimage: true, ratios: 11 },
];

test.each(expectations)('model $model shows exactly its own fields and $ratios aspect ratios', async ({ model, images, textimage, ratios }) => {
	await withEditorLog(async () => {
		await chooseModel(model);
		await expectShown(parameter('prompt'), true);
		await expectShown(page.locator('[data-test-id="node-parameters"] [data-test-id="fixed-collection-images"]'), images);
		for (const name of ['negativePrompt', 'styleType', 'magicPromptOption']) {
			await expectShown(parameter(name), textimage);
		}
		await expect(aspectRatioCount()).resolves.toBe(ratios);
		await page.screenshot({ path: join(ARTIFACTS, `editor-${model}.png`) });
	});
});
