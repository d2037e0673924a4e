// n8n's first-start owner account, set up through its REST endpoint so the editor opens at the
// sign-in page (not the setup form) and the printed login works.
'use strict';

/** Resolves true when the owner was created now, false when this instance already had one. */
async function setUpOwner(editorUrl, { email, password, firstName = 'Demo', lastName = 'Owner' }) {
	const response = await fetch(`${editorUrl}/rest/owner/setup`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ email, password, firstName, lastName }),
	});
	if (response.ok) return true;
	const text = await response.text();
	if (response.status === 400 && /already/i.test(text)) return false;
	throw new Error(`n8n owner setup answered ${response.status}: ${text}`);
}

module.exports = { setUpOwner };
