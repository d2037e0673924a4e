/** A generation that fails is answered in our error shape and charges nothing: both checked at once. */
import type { InProcessApp } from '../../support/app';
import { generateIn } from './generate-in';

export async function imagesCharged(app: InProcessApp): Promise<number> {
	const usage = (await (await app.request('/v1/usage', { headers: app.auth })).json()) as { total: { images: number } };
	return usage.total.images;
}

/** Asks for `body`, expects a 502 with `code` and a message matching `message`, and the key's images unchanged. */
export async function expectFailedUncharged(app: InProcessApp, body: Record<string, unknown>, code: string, message: RegExp): Promise<void> {
	const before = await imagesCharged(app);
	const answer = await generateIn(app, body);
	expect(answer.status).toBe(502);
	expect(answer.body.error.code).toBe(code);
	expect(answer.body.error.message).toMatch(message);
	expect(await imagesCharged(app)).toBe(before);
}
