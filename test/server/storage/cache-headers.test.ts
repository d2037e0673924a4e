import { MAX_CACHE_SECONDS, cacheSeconds, hostedFileHeaders, missingFileHeaders } from '../../../server/src/storage/cache-headers';

const now = new Date('2026-05-01T12:00:00.000Z');
const file = (secondsLeft: number) => ({
	mimeType: 'image/jpeg',
	etag: '"abc123"',
	name: 'Xy_-12ab.jpg',
	createdAt: new Date('2026-05-01T11:00:00.000Z'),
	expiresAt: new Date(now.getTime() + secondsLeft * 1000),
});

function maxAgeOf(headers: Record<string, string>): number {
	const match = /max-age=(\d+)/.exec(headers['cache-control'] ?? '');
	if (!match) throw new Error(`no max-age in ${headers['cache-control']}`);
	return Number(match[1]);
}

describe('hostedFileHeaders', () => {
	it('describes the file and lets any site read it, but no search engine list it', () => {
		const headers = hostedFileHeaders(file(86_400), now);
		expect(headers).toMatchObject({
			'content-type': 'image/jpeg',
			etag: '"abc123"',
			'last-modified': 'Fri, 01 May 2026 11:00:00 GMT',
			'accept-ranges': 'bytes',
			'x-robots-tag': 'noindex',
			'access-control-allow-origin': '*',
			'x-content-type-options': 'nosniff',
			'content-disposition': 'inline; filename="Xy_-12ab.jpg"',
		});
		const exposed = headers['access-control-expose-headers']!.split(',').map((name) => name.trim().toLowerCase());
		expect(exposed).toEqual(expect.arrayContaining(['content-length', 'content-range', 'etag']));
	});

	it('caps the cache lifetime at an hour, so a deleted file is not served long after', () => {
		const headers = hostedFileHeaders(file(86_400), now);
		expect(headers['cache-control']).toBe(`public, max-age=${MAX_CACHE_SECONDS}, must-revalidate`);
		expect(MAX_CACHE_SECONDS).toBe(3600);
		expect(headers.expires).toBe('Fri, 01 May 2026 13:00:00 GMT');
	});

	it.each([1, 59, 600, 3599, 3600, 3601, 7200])('never lets a cache keep a file past its expiry (%i s left)', (secondsLeft) => {
		const headers = hostedFileHeaders(file(secondsLeft), now);
		const maxAge = maxAgeOf(headers);
		expect(maxAge).toBe(Math.min(secondsLeft, 3600));
		expect(now.getTime() + maxAge * 1000).toBeLessThanOrEqual(file(secondsLeft).expiresAt.getTime());
		expect(Date.parse(headers.expires!)).toBeLessThanOrEqual(file(secondsLeft).expiresAt.getTime());
	});

	it('rounds the time left down, never up', () => {
		const expiresAt = new Date(now.getTime() + 90_999);
		expect(cacheSeconds(expiresAt, now)).toBe(90);
	});

	it('forbids caching once (or after) the file expires', () => {
		for (const secondsLeft of [0, -1, -86_400]) {
			const headers = hostedFileHeaders(file(secondsLeft), now);
			expect(headers['cache-control']).toBe('no-store');
			expect(Date.parse(headers.expires!)).toBe(now.getTime());
		}
		expect(cacheSeconds(new Date(now.getTime() + 999), now)).toBe(0);
	});

	it('keeps the Content-Disposition header well formed whatever the name', () => {
		const headers = hostedFileHeaders({ ...file(60), name: 'a"b\r\nc d.png' }, now);
		expect(headers['content-disposition']).toBe(`inline; filename="a_b__c d.png"; filename*=UTF-8''a%22b%0D%0Ac%20d.png`);
	});

	it('uses the current time by default', () => {
		const headers = hostedFileHeaders({ ...file(0), expiresAt: new Date(Date.now() + 120_000) });
		expect(maxAgeOf(headers)).toBeGreaterThanOrEqual(118);
		expect(maxAgeOf(headers)).toBeLessThanOrEqual(120);
	});
});

describe('missingFileHeaders', () => {
	it('forbids caching a 404, so a file is never hidden by a remembered absence', () => {
		expect(missingFileHeaders()).toEqual({ 'cache-control': 'no-store', 'x-robots-tag': 'noindex', 'access-control-allow-origin': '*' });
	});
});
