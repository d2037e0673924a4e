/**
 * The operator page (GET /admin) in the Chromium that npm brings (@sparticuz/chromium with
 * playwright-core, launched as editor.test.ts does), against the built CLI on loopback: sign in
 * with the admin key, create a key (secret shown once, copied), block, edit, rotate and revoke it,
 * and the spend chart. Every change is checked against the service itself, not only the page.
 * Screenshots go to test-artifacts/. The browser may only talk to loopback, and the page must run
 * under its Content-Security-Policy without a single violation.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startServer, type RunningServer } from '../helpers/server';
import { call, download, postJson } from '../server/support/http';
import { ARTIFACTS, openBrowser, type Browser } from './support/browser';

const ADMIN_KEY = 'admin-key-0123456789abcdef';

let server: RunningServer;
let withoutAdmin: RunningServer;
let browser: Browser;
let page: Page;
let problems: string[];

beforeAll(async () => {
	[server, withoutAdmin] = await Promise.all([startServer({ args: ['--admin-key', ADMIN_KEY] }), startServer({ args: ['--admin-key', 'none'] })]);
	// Spend to draw: two generations on the flat key, one on a managed key.
	const seeded = await postJson(server, '/v1/admin/keys', { name: 'Seeded key', budget_usd: 1, budget_period: 'month' }, { auth: `Bearer ${ADMIN_KEY}` });
	expect(seeded.status).toBe(201);
	for (const auth of [undefined, undefined, `Bearer ${seeded.body.key}`]) {
		expect((await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'Seed', response_format: 'b64_json' }, { auth })).status).toBe(200);
	}
	browser = await openBrowser({ width: 1280, height: 900 });
	({ page, problems } = browser);
	await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
}, 120_000);

afterAll(async () => {
	await browser?.close();
	await Promise.all([server, withoutAdmin].map((each) => each?.stop({ removeData: true })));
});

const row = (name: string) => page.locator('#keys tbody tr', { hasText: name });
const asKey = (secret: string, path = '/v1/models') => call(server, path, { auth: `Bearer ${secret}` });

test('the page and its assets come from the service, under a strict Content-Security-Policy', async () => {
	const response = await fetch(`${server.origin}/admin`);
	expect(response.status).toBe(200);
	const policy = response.headers.get('content-security-policy') ?? '';
	expect(policy).toContain("script-src 'self'");
	expect(policy).toContain("style-src 'self'");
	expect(policy).not.toContain('unsafe-inline');
	const html = await response.text();
	expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
	expect(html).not.toMatch(/https?:\/\//);
	for (const asset of ['admin.js', 'api.js', 'chart.js', 'format.js', 'admin.css', 'uPlot.esm.js', 'uPlot.min.css']) {
		expect((await download(`${server.origin}/admin/assets/${asset}`)).status).toBe(200);
	}
	expect((await fetch(`${server.origin}/admin/assets/..%2Fpackage.json`)).status).toBe(404);
	expect((await fetch(`${server.origin}/admin/assets/index.html`)).status).toBe(404);
	expect((await fetch(`${withoutAdmin.origin}/admin`)).status).toBe(404);
});

test('sign in: a wrong key is refused, the admin key lists the keys with spend against budget', async () => {
	await page.goto(`${server.origin}/admin`);
	await page.fill('#admin-key', 'not-the-admin-key-123');
	await page.click('#sign-in-form button[type=submit]');
	await page.locator('#sign-in-error').filter({ hasText: 'not the admin key' }).waitFor();
	await page.fill('#admin-key', ADMIN_KEY);
	await page.click('#sign-in-form button[type=submit]');
	await row('Seeded key').waitFor();
	await expect(row('Seeded key').textContent()).resolves.toMatch(/\$0\.0035 of \$1\.0000 per UTC month/);
	await page.locator('#chart .uplot canvas').first().waitFor();
	await expect(page.locator('#chart .u-legend').textContent()).resolves.toMatch(/Seeded key/);
	// The period by model: three p-image images, no seconds of video, their spend.
	await expect(page.locator('#by-model tbody').textContent()).resolves.toBe('p-image30$0.0105');
	await page.screenshot({ path: join(ARTIFACTS, 'admin-keys.png'), fullPage: true });
});

test('recent jobs: every key\'s generations, newest first, with their key, state and times in UTC', async () => {
	const listed = await call(server, '/v1/admin/jobs', { auth: `Bearer ${ADMIN_KEY}` });
	expect(listed.status).toBe(200);
	const jobs = listed.body.data as Array<{ id: string; created: number }>;
	expect(jobs).toHaveLength(3);
	const rows = page.locator('#jobs tbody tr');
	await rows.nth(2).waitFor();
	const texts = await rows.allTextContents();
	jobs.forEach((job, index) => {
		expect(texts[index]).toContain(job.id);
		expect(texts[index]).toContain(new Date(job.created * 1000).toISOString().slice(0, 19).replace('T', ' '));
		expect(texts[index]).toMatch(/p-image.*succeeded/);
	});
	expect(texts[0]).toContain('Seeded key');
	expect(texts[1]).toContain('flat key');
});

test('create: the secret is shown once, copied, and works at once with the chosen limits', async () => {
	await page.click('#new-key');
	await page.fill('#key-form input[name=name]', 'Team Alpha');
	await page.check('#key-form input[value=p-image]');
	await page.fill('#key-form input[name=budget_usd]', '5');
	await page.selectOption('#key-form select[name=budget_period]', 'day');
	await page.click('#key-form-submit');
	await page.locator('#secret-dialog[open]').waitFor();
	const secret = (await page.textContent('#secret'))!;
	expect(secret).toMatch(/^igk_[A-Za-z0-9_-]{32,}$/);
	await page.click('#copy-secret');
	await page.locator('#copied').filter({ hasText: 'Copied' }).waitFor();
	expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
	await page.screenshot({ path: join(ARTIFACTS, 'admin-secret.png') });
	await page.click('#secret-dialog [data-close]');
	// The dialog's close event is queued as a task, so the secret is wiped just after the dialog shuts.
	await page.locator('#secret:empty').waitFor({ state: 'attached', timeout: 5_000 });
	await row('Team Alpha').waitFor();
	const models = await asKey(secret);
	expect(models.status).toBe(200);
	expect(models.body.data.map((model: { id: string }) => model.id)).toEqual(['p-image']);
	await expect(row('Team Alpha').textContent()).resolves.toMatch(/\$0\.0000 of \$5\.0000 per UTC day/);

	// Block, unblock, edit, rotate, revoke: each seen by the service.
	await row('Team Alpha').locator('button[data-action=block]').click();
	await row('Team Alpha').locator('.badge.blocked').waitFor();
	expect((await asKey(secret)).body.error.code).toBe('key_blocked');
	await row('Team Alpha').locator('button[data-action=block]').click();
	await row('Team Alpha').locator('.badge:not(.blocked)').waitFor();
	expect((await asKey(secret)).status).toBe(200);

	await row('Team Alpha').locator('button[data-action=edit]').click();
	await page.fill('#key-form input[name=budget_usd]', '12.5');
	await page.fill('#key-form input[name=rate_limit_per_minute]', '30');
	await page.click('#key-form-submit');
	await row('Team Alpha').filter({ hasText: '30/min' }).waitFor();
	const listed = await call(server, '/v1/admin/keys', { auth: `Bearer ${ADMIN_KEY}` });
	const alpha = listed.body.data.find((key: { name: string }) => key.name === 'Team Alpha');
	expect(alpha.budget.limit_usd).toBe(12.5);
	expect(alpha.rate_limit_per_minute).toBe(30);

	await row('Team Alpha').locator('button[data-action=rotate]').click();
	await page.click('#confirm-ok');
	await page.locator('#secret-dialog[open]').waitFor();
	const rotated = (await page.textContent('#secret'))!;
	expect(rotated).not.toBe(secret);
	await page.click('#secret-dialog [data-close]');
	expect((await asKey(secret)).status).toBe(401);
	expect((await asKey(rotated)).status).toBe(200);

	await row('Team Alpha').locator('button[data-action=revoke]').click();
	await page.click('#confirm-ok');
	await row('Team Alpha').waitFor({ state: 'detached' });
	expect((await asKey(rotated)).body.error.code).toBe('invalid_api_key');
	await page.screenshot({ path: join(ARTIFACTS, 'admin-after.png'), fullPage: true });
});

/** The JSON bodies of the PATCH requests the page sends while `work` runs. */
async function patchesDuring(work: () => Promise<void>): Promise<unknown[]> {
	const bodies: unknown[] = [];
	const record = (request: import('playwright-core').Request) => {
		if (request.method() === 'PATCH') bodies.push(request.postDataJSON());
	};
	page.on('request', record);
	try {
		await work();
	} finally {
		page.off('request', record);
	}
	return bodies;
}

const adminKey = async (id: string) => (await call(server, `/v1/admin/keys/${id}`, { auth: `Bearer ${ADMIN_KEY}` })).body;

async function saveEdit(name: string, change: () => Promise<void>, savedAs: string): Promise<unknown[]> {
	return await patchesDuring(async () => {
		await row(name).locator('button[data-action=edit]').click();
		await change();
		await page.click('#key-form-submit');
		await page.locator('#key-dialog:not([open])').waitFor({ state: 'attached' });
		await row(savedAs).waitFor();
	});
}

test('edit sends only the fields the operator changed: a rename keeps an expiry with a time of day', async () => {
	const settings = { models: ['p-image'], budget_usd: 2, budget_period: 'month', rate_limit_per_minute: 5, expires_at: '2027-01-01T06:00:00Z' };
	const created = await postJson(server, '/v1/admin/keys', { name: 'Timed key', ...settings }, { auth: `Bearer ${ADMIN_KEY}` });
	expect(created.status).toBe(201);
	await page.reload();

	const renamed = await saveEdit('Timed key', () => page.fill('#key-form input[name=name]', 'Timed key renamed'), 'Timed key renamed');
	expect(renamed).toEqual([{ name: 'Timed key renamed' }]);
	expect(await adminKey(created.body.id)).toMatchObject({
		name: 'Timed key renamed',
		models: ['p-image'],
		rate_limit_per_minute: 5,
		expires_at: '2027-01-01T06:00:00.000Z',
		budget: { limit_usd: 2, period: 'month' },
	});

	// An emptied field still clears its limit, and only that one.
	const cleared = await saveEdit('Timed key renamed', () => page.fill('#key-form input[name=rate_limit_per_minute]', ''), 'Timed key renamed');
	expect(cleared).toEqual([{ rate_limit_per_minute: null }]);
	expect(await adminKey(created.body.id)).toMatchObject({ rate_limit_per_minute: null, expires_at: '2027-01-01T06:00:00.000Z', budget: { limit_usd: 2, period: 'month' } });
});

test('an expired key can be renamed: its past expiry is not sent back', async () => {
	const expiresAt = new Date(Date.now() + 2_000).toISOString();
	const created = await postJson(server, '/v1/admin/keys', { name: 'Short-lived key', expires_at: expiresAt }, { auth: `Bearer ${ADMIN_KEY}` });
	expect(created.status).toBe(201);
	await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 200));
	await page.reload();
	await row('Short-lived key').locator('.badge.expired').waitFor();

	const renamed = await saveEdit('Short-lived key', () => page.fill('#key-form input[name=name]', 'Expired key renamed'), 'Expired key renamed');
	expect(renamed).toEqual([{ name: 'Expired key renamed' }]);
	expect(await adminKey(created.body.id)).toMatchObject({ name: 'Expired key renamed', expires_at: expiresAt });
});

test('the spend chart stacks keys per day: each bar starts where the one below ends', async () => {
	// Given as text: the test's compiler would turn an import() in a function into a require().
	const layers = await page.evaluate(`(async () => {
		const chart = await import('/admin/assets/chart.js');
		return chart.stacked([
			{ label: 'a', values: [1, 2, 0] },
			{ label: 'b', values: [3, 0, 0.5] },
			{ label: 'c', values: [0.25, 1, 0] },
		]);
	})()`);
	// Drawn topmost first, each up to its running total; the legend keeps each key's own spend.
	expect(layers).toEqual([
		{ label: 'c', index: 2, values: [0.25, 1, 0], tops: [4.25, 3, 0.5] },
		{ label: 'b', index: 1, values: [3, 0, 0.5], tops: [4, 2, 0.5] },
		{ label: 'a', index: 0, values: [1, 2, 0], tops: [1, 2, 0] },
	]);
});

test('the legend names the day and the keys\' spend; every amount on the page has one format', async () => {
	await page.setViewportSize({ width: 1280, height: 900 });
	await page.reload();
	await row('Seeded key').waitFor();
	await page.locator('#chart .uplot canvas').first().waitFor();
	const legend = (await page.locator('#chart .u-legend').textContent())!;
	expect(legend).not.toMatch(/Time|--/);
	expect(legend).toMatch(/^Day/);
	expect(legend).toMatch(/Seeded key\$0\.0035/);
	const amounts = [...((await page.locator('#console').textContent())!.matchAll(/\$[\d.,]+/g))].map((match) => match[0]);
	expect(amounts.length).toBeGreaterThan(4);
	expect(amounts.filter((amount) => !/^\$\d+\.\d{4}$/.test(amount))).toEqual([]);
});

test('names, models and dates stay on one line in a narrow window: they do not break at their hyphens', async () => {
	const created = await postJson(server, '/v1/admin/keys', { name: 'North-East-Regional-Marketing-Team', models: ['p-image-edit', 'p-image'], budget_usd: 3, budget_period: 'month', expires_at: '2027-03-31T12:00:00Z' }, { auth: `Bearer ${ADMIN_KEY}` });
	expect(created.status).toBe(201);
	await page.setViewportSize({ width: 720, height: 900 });
	try {
		await page.reload();
		const cells = row('North-East-Regional-Marketing-Team').locator('td');
		await cells.first().waitFor();
		// The lines a cell's text takes: the distinct tops of its rectangles.
		const lines = (cell: import('playwright-core').Locator, selector: string) =>
			cell.evaluate((node, inner) => {
				const range = node.ownerDocument.createRange();
				range.selectNodeContents(inner ? node.querySelector(inner)! : node);
				return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
			}, selector);
		expect(await lines(cells.nth(0), '')).toBe(1);
		expect(await lines(cells.nth(6), '')).toBe(1);
		expect(await lines(cells.nth(4), 'time')).toBe(1);
		expect(await lines(cells.nth(3), '.model')).toBe(1);
		await page.screenshot({ path: join(ARTIFACTS, 'admin-narrow.png'), fullPage: true });
	} finally {
		await page.setViewportSize({ width: 1280, height: 900 });
	}
});

test('a phone-wide window (420 px) never scrolls sideways: wide tables scroll inside their card, long ids wrap', async () => {
	await page.setViewportSize({ width: 420, height: 900 });
	try {
		await page.reload();
		await row('Seeded key').waitFor();
		await page.locator('#jobs tbody tr').first().waitFor();
		await page.locator('#chart .uplot canvas').first().waitFor();
		const pageWidth = () => page.evaluate<number>('document.documentElement.scrollWidth');
		expect(await pageWidth()).toBeLessThanOrEqual(420);
		// The keys table is wider than the card: it scrolls within its own box, which stays inside the window.
		const keysBox = await page.locator('#keys').evaluate((table) => {
			const box = table.parentElement!;
			return { scrolls: box.scrollWidth > box.clientWidth, right: box.getBoundingClientRect().right };
		});
		expect(keysBox.scrolls).toBe(true);
		expect(keysBox.right).toBeLessThanOrEqual(420);
		// A job id wraps onto a few lines, neither widening its column nor stacked a character a line.
		const idLines = await page.locator('#jobs tbody tr td code').first().evaluate((code) => {
			const range = code.ownerDocument.createRange();
			range.selectNodeContents(code);
			return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
		});
		expect(idLines).toBeGreaterThanOrEqual(2);
		expect(idLines).toBeLessThanOrEqual(3);
		await page.screenshot({ path: join(ARTIFACTS, 'admin-420.png'), fullPage: true });
		await page.locator('#new-key').click();
		await page.locator('#key-dialog').waitFor();
		const dialog = await page.locator('#key-dialog').evaluate((node) => ({ right: node.getBoundingClientRect().right, overflows: node.scrollWidth > node.clientWidth }));
		expect(dialog).toEqual({ right: expect.any(Number), overflows: false });
		expect(dialog.right).toBeLessThanOrEqual(420);
		expect(await pageWidth()).toBeLessThanOrEqual(420);
		await page.locator('#key-dialog [data-close]').click();
	} finally {
		await page.setViewportSize({ width: 1280, height: 900 });
	}
});

test('the chart falls back to a language tag Intl takes when the browser reports one it refuses', async () => {
	const chosen = await page.evaluate(`(async () => {
		const { usableLocale } = await import('/admin/assets/chart.js');
		return ['en-US@posix', 'de-DE', 'sr-RS@latin', 'C', '', undefined].map(usableLocale);
	})()`);
	expect(chosen).toEqual(['en-US', 'de-DE', 'sr-RS', 'en-US', 'en-US', 'en-US']);
});

test('nothing the page did broke its Content-Security-Policy or threw', () => {
	// A refused sign-in is a 401 the browser logs as a failed resource; that one is expected.
	expect(problems.filter((problem) => !/status of 401/.test(problem))).toEqual([]);
});
