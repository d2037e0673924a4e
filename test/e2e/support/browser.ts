/**
 * The Chromium that npm brings (@sparticuz/chromium, driven by playwright-core), for the e2e tests
 * that look at a page. A fresh profile every launch, and the browser may only talk to loopback:
 * anything a page would fetch from the internet (fonts, telemetry, updates) is refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const ARTIFACTS = join(__dirname, '..', '..', '..', 'test-artifacts');
const LOOPBACK = /^(127(?:\.\d{1,3}){3}|localhost|\[::1\])$/;

/**
 * `executablePath()` unpacks the build (once) and `args` are the flags it needs. The package is an
 * ES module, which jest's CommonJS runtime cannot load, so a plain node process asks it.
 */
function npmChromium(): { executablePath: string; args: string[] } {
	const script = "import c from '@sparticuz/chromium'; process.stdout.write(JSON.stringify({ executablePath: await c.executablePath(), args: c.args }));";
	return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: __dirname, encoding: 'utf8' }));
}

export interface Browser {
	context: BrowserContext;
	page: Page;
	/** Console errors and uncaught exceptions of the page (CSP violations arrive as console errors). */
	problems: string[];
	close(): Promise<void>;
}

export interface BrowserOptions {
	/**
	 * Launch under this system locale (LANG and LC_ALL) instead of forcing `en-US`: Chromium then
	 * derives navigator.language from it, as it does on an operator's machine.
	 */
	systemLocale?: string;
}

export async function openBrowser(viewport: { width: number; height: number }, options: BrowserOptions = {}): Promise<Browser> {
	const browser = npmChromium();
	const profile = mkdtempSync(join(tmpdir(), 'imagegen-chromium-'));
	const locale = options.systemLocale
		? { env: { ...process.env, LANG: options.systemLocale, LC_ALL: options.systemLocale, LANGUAGE: '' } }
		: { locale: 'en-US' };
	const context = await chromium.launchPersistentContext(profile, {
		executablePath: browser.executablePath,
		headless: true,
		viewport,
		...locale,
		timezoneId: 'UTC',
		// No sandbox for root; and nothing may leave the machine: no background updates, sync or QUIC.
		args: [...browser.args, '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	await context.route('**/*', (route) => {
		const { hostname } = new URL(route.request().url());
		return LOOPBACK.test(hostname) ? route.continue() : route.abort();
	});
	const page = await context.newPage();
	const problems: string[] = [];
	page.on('console', (message) => {
		if (message.type() === 'error') problems.push(message.text());
	});
	page.on('pageerror', (error) => problems.push(error.message));
	mkdirSync(ARTIFACTS, { recursive: true });
	return {
		context,
		page,
		problems,
		async close() {
			await context.close();
			rmSync(profile, { recursive: true, force: true });
		},
	};
}
