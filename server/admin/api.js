// The admin API of this same service, called with the admin key kept in this tab's sessionStorage.
const STORAGE_KEY = 'imagegen-admin-key';

export const session = {
	get: () => sessionStorage.getItem(STORAGE_KEY),
	set: (key) => sessionStorage.setItem(STORAGE_KEY, key),
	clear: () => sessionStorage.removeItem(STORAGE_KEY),
};

export class ApiError extends Error {
	constructor(status, body) {
		super(body?.error?.message ?? `HTTP ${status}`);
		this.status = status;
		this.code = body?.error?.code;
		this.param = body?.error?.param;
	}
}

async function request(method, path, body) {
	const headers = { authorization: `Bearer ${session.get() ?? ''}` };
	if (body !== undefined) headers['content-type'] = 'application/json';
	const response = await fetch(`/v1/admin${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
	if (response.status === 204) return null;
	const answer = await response.json().catch(() => null);
	if (!response.ok) throw new ApiError(response.status, answer);
	return answer;
}

export const api = {
	listKeys: async () => (await request('GET', '/keys')).data,
	createKey: (fields) => request('POST', '/keys', fields),
	updateKey: (id, fields) => request('PATCH', `/keys/${encodeURIComponent(id)}`, fields),
	rotateKey: (id, graceSeconds) => request('POST', `/keys/${encodeURIComponent(id)}/rotate`, { grace_seconds: graceSeconds }),
	revokeKey: (id) => request('DELETE', `/keys/${encodeURIComponent(id)}`),
	usage: (from) => request('GET', `/usage?from=${from}`),
	recentJobs: async (limit) => (await request('GET', `/jobs?limit=${limit}`)).data,
};
