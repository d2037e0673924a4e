/** A generation asked of an app built in process (support/app.ts), its answer read as JSON. */
import type { InProcessApp } from '../../support/app';

export interface GenerationAnswer {
	status: number;
	headers: Headers;
	body: any;
}

export async function generateIn(app: InProcessApp, body: Record<string, unknown>): Promise<GenerationAnswer> {
	const response = await app.request('/v1/images/generations', {
		method: 'POST',
		headers: { ...app.auth, 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	return { status: response.status, headers: response.headers, body: await response.json() };
}
