/**
 * GET /admin as the start-up banner announces it: the CLI names the operator page (at the public
 * URL) when there is an admin key, and neither names nor serves it with `--admin-key none`.
 */
import { startServer, type RunningServer } from '../../helpers/server';

const ADMIN_KEY = 'admin-key-0123456789abcdef';

let withAdmin: RunningServer;
let withoutAdmin: RunningServer;
beforeAll(async () => {
	[withAdmin, withoutAdmin] = await Promise.all([startServer({ args: ['--admin-key', ADMIN_KEY] }), startServer({ args: ['--admin-key', 'none'] })]);
});
afterAll(async () => {
	await Promise.all([withAdmin, withoutAdmin].map((server) => server?.stop({ removeData: true })));
});

test('with --admin-key the banner names the operator page, which answers there', async () => {
	const line = /^ {2}operator page: (\S+)$/m.exec(withAdmin.output());
	expect(line?.[1]).toBe(`${withAdmin.origin}/admin`);
	const page = await fetch(line![1]!);
	expect(page.status).toBe(200);
	expect(page.headers.get('content-type')).toMatch(/^text\/html/);
	expect(withAdmin.output()).not.toContain(ADMIN_KEY);
});

test('with --admin-key none the banner does not mention the page, and there is none', async () => {
	expect(withoutAdmin.output()).not.toMatch(/admin/i);
	expect((await fetch(`${withoutAdmin.origin}/admin`)).status).toBe(404);
});
