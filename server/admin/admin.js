// The operator page: sign in with the admin key, manage keys, see spend per day and recent jobs.
import { api, ApiError, session } from '/admin/assets/api.js';
import { daysSince, drawSpend, seriesOf, totalsByModel } from '/admin/assets/chart.js';
import { dayOf, usd, utcSecondOf } from '/admin/assets/format.js';

const $ = (selector) => document.querySelector(selector);
let keys = [];
/** How many recent jobs the page shows. */
const RECENT_JOBS = 50;

function element(tag, properties = {}, children = []) {
	const node = Object.assign(document.createElement(tag), properties);
	node.append(...children);
	return node;
}

function showError(target, error) {
	$(target).textContent = error ? error.message : '';
}

async function signedIn() {
	$('#sign-in').hidden = true;
	$('#console').hidden = false;
	$('#sign-out').hidden = false;
	await refresh();
}

function signedOut(message = '') {
	session.clear();
	$('#console').hidden = true;
	$('#sign-out').hidden = true;
	$('#sign-in').hidden = false;
	$('#sign-in-error').textContent = message;
	$('#admin-key').focus();
}

/** A refused admin key ends the session instead of showing the same error on every action. */
async function guarded(work, errorTarget) {
	try {
		showError(errorTarget, null);
		return await work();
	} catch (error) {
		if (error instanceof ApiError && (error.status === 401 || error.code === 'admin_only')) signedOut('That is not the admin key of this service.');
		else showError(errorTarget, error);
		return undefined;
	}
}

async function refresh() {
	await guarded(async () => {
		keys = await api.listKeys();
		renderKeys();
		await Promise.all([renderUsage(), renderJobs()]);
	}, '#console-error');
}

/** A day as one unbreakable piece (admin.css): a line break at its hyphens would read as two dates. */
function date(timestamp) {
	return element('time', { dateTime: timestamp, textContent: dayOf(timestamp) });
}

function status(key) {
	if (key.blocked) return element('span', { className: 'badge blocked', textContent: 'blocked' });
	if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) return element('span', { className: 'badge expired', textContent: 'expired' });
	return element('span', { className: 'badge', textContent: 'active' });
}

function spend(key) {
	if (!key.budget) return element('span', { className: 'hint', textContent: 'no budget' });
	const { spent_usd: spent, limit_usd: limit, period, resets_at: resets } = key.budget;
	const meter = element('meter', { min: 0, max: limit, value: Math.min(spent, limit), low: limit * 0.7, high: limit * 0.9, optimum: 0 });
	const period_ = period === 'total' ? 'in total' : `per UTC ${period}`;
	const note = element('small', { textContent: `${usd(spent)} of ${usd(limit)} ${period_}` });
	if (resets) note.append(' · resets ', date(resets));
	return element('div', { className: 'spend' }, [meter, note]);
}

function actions(key) {
	const button = (label, action, danger = false) => {
		const node = element('button', { type: 'button', className: danger ? 'small danger' : 'small', textContent: label });
		node.dataset.action = action;
		node.dataset.id = key.id;
		return node;
	};
	return [button('Edit', 'edit'), button(key.blocked ? 'Unblock' : 'Block', 'block'), button('Rotate', 'rotate'), button('Revoke', 'revoke', true)];
}

function renderKeys() {
	const rows = keys.map((key) =>
		element('tr', {}, [
			element('td', { className: 'name', textContent: key.name, title: key.name }),
			element('td', { className: 'prefix', textContent: `${key.prefix}…` }),
			element('td', {}, [status(key)]),
			element('td', {}, key.models ? key.models.flatMap((model, index) => [...(index ? [', '] : []), element('span', { className: 'model', textContent: model })]) : ['all']),
			element('td', {}, [spend(key)]),
			element('td', { textContent: key.rate_limit_per_minute ? `${key.rate_limit_per_minute}/min` : 'default' }),
			element('td', {}, [key.expires_at ? date(key.expires_at) : 'never']),
			element('td', { className: 'actions' }, actions(key)),
		]),
	);
	$('#keys tbody').replaceChildren(...rows);
	$('#keys').hidden = keys.length === 0;
	$('#no-keys').hidden = keys.length > 0;
}

/** A key id as the operator knows it: a managed key's name, or what kind of key it was. */
function keyName(id) {
	return keys.find((key) => key.id === id)?.name ?? (id.startsWith('key_') ? `${id} (revoked)` : `flat key ${id.slice(0, 6)}`);
}

async function renderUsage() {
	const from = dayOf(new Date(Date.now() - (Number($('#range').value) - 1) * 86_400_000).toISOString());
	const usage = await api.usage(from);
	const days = daysSince(from);
	const series = seriesOf(usage.data, days, keyName);
	await drawSpend($('#chart'), days, series);
	$('#no-usage').hidden = series.length > 0;
	const totals = totalsByModel(usage.data);
	$('#by-model tbody').replaceChildren(
		...totals.map((total) =>
			element('tr', {}, [
				element('td', {}, [element('span', { className: 'model', textContent: total.model })]),
				element('td', { textContent: String(total.images) }),
				element('td', { textContent: String(total.seconds) }),
				element('td', { textContent: usd(total.cost) }),
			]),
		),
	);
	$('#by-model').hidden = totals.length === 0;
}

function utcTime(seconds) {
	return element('time', { dateTime: new Date(seconds * 1000).toISOString(), textContent: utcSecondOf(seconds) });
}

async function renderJobs() {
	const jobs = await api.recentJobs(RECENT_JOBS);
	const rows = jobs.map((job) =>
		element('tr', {}, [
			element('td', {}, [element('code', { textContent: job.id })]),
			element('td', { className: 'name', textContent: keyName(job.key_id), title: job.key_id }),
			element('td', {}, [element('span', { className: 'model', textContent: job.model })]),
			element('td', {}, [element('span', { className: `badge ${job.status}`, textContent: job.status })]),
			element('td', {}, [utcTime(job.created)]),
			element('td', {}, job.finished_at === null ? [] : [utcTime(job.finished_at)]),
			element('td', {}, job.error_code === null ? [] : [element('code', { textContent: job.error_code })]),
		]),
	);
	$('#jobs tbody').replaceChildren(...rows);
	$('#jobs').hidden = jobs.length === 0;
	$('#no-jobs').hidden = jobs.length > 0;
}

// Create and edit share one form; `editing` is the key being edited, or null for a new key, and
// `shownState` what the form showed when it opened, so that an edit sends only what was changed.
let editing = null;
let shownState = null;

function openKeyForm(key) {
	editing = key;
	const form = $('#key-form');
	form.reset();
	showError('#key-form-error', null);
	$('#key-dialog-title').textContent = key ? `Edit ${key.name}` : 'New key';
	$('#key-form-submit').textContent = key ? 'Save' : 'Create';
	if (key) {
		form.elements.name.value = key.name;
		for (const box of form.querySelectorAll('input[name="models"]')) box.checked = key.models?.includes(box.value) ?? false;
		form.elements.budget_usd.value = key.budget?.limit_usd ?? '';
		form.elements.budget_period.value = key.budget?.period ?? 'total';
		form.elements.rate_limit_per_minute.value = key.rate_limit_per_minute ?? '';
		form.elements.expires_at.value = key.expires_at ? dayOf(key.expires_at) : '';
	}
	shownState = stateOf(form);
	$('#key-dialog').showModal();
}

/** What the form's inputs hold, as text, before any conversion for the API. */
function stateOf(form) {
	const text = (name) => form.elements[name].value;
	return {
		name: text('name').trim(),
		models: [...form.querySelectorAll('input[name="models"]:checked')].map((box) => box.value).join(','),
		budget_usd: text('budget_usd'),
		budget_period: text('budget_period'),
		rate_limit_per_minute: text('rate_limit_per_minute'),
		expires_at: text('expires_at'),
	};
}

/**
 * The form as the admin API takes it. A new key gets every filled field. An edit sends only the
 * fields the operator changed, an emptied one as `null` (the limit is cleared): the date input
 * holds a day, so sending it back unchanged would move an expiry's time of day to 23:59:59, and
 * an expired key could not be renamed, since a past expiry is refused.
 */
function fieldsOf(form) {
	const state = stateOf(form);
	const changed = (name) => !editing || state[name] !== shownState[name];
	const empty = editing ? null : undefined;
	const number = (text) => (text === '' ? empty : Number(text));
	const fields = {};
	if (changed('name')) fields.name = state.name;
	if (changed('models')) fields.models = state.models ? state.models.split(',') : empty;
	if (changed('budget_usd')) fields.budget_usd = number(state.budget_usd);
	// The period belongs to the budget: sent with a new budget, or alone when only it changed.
	if ((changed('budget_usd') || changed('budget_period')) && state.budget_usd !== '') fields.budget_period = state.budget_period;
	if (changed('rate_limit_per_minute')) fields.rate_limit_per_minute = number(state.rate_limit_per_minute);
	if (changed('expires_at')) fields.expires_at = state.expires_at ? new Date(`${state.expires_at}T23:59:59Z`).toISOString() : empty;
	return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

function showSecret(secret) {
	$('#secret').textContent = secret;
	$('#copied').textContent = '';
	$('#secret-dialog').showModal();
}

/** Resolves true when the operator confirms. */
function confirmAction(title, text, withGrace = false) {
	$('#confirm-title').textContent = title;
	$('#confirm-text').textContent = text;
	$('#grace-field').hidden = !withGrace;
	$('#grace').value = '0';
	$('#confirm-dialog').showModal();
	return new Promise((resolve) => {
		const ok = $('#confirm-ok');
		const done = (answer) => {
			ok.removeEventListener('click', yes);
			$('#confirm-dialog').removeEventListener('close', no);
			resolve(answer);
		};
		const yes = () => {
			done(true);
			$('#confirm-dialog').close();
		};
		const no = () => done(false);
		ok.addEventListener('click', yes);
		$('#confirm-dialog').addEventListener('close', no);
	});
}

async function act(action, key) {
	if (action === 'edit') return openKeyForm(key);
	if (action === 'block') {
		await guarded(() => api.updateKey(key.id, { blocked: !key.blocked }), '#console-error');
	} else if (action === 'rotate') {
		if (!(await confirmAction(`Rotate ${key.name}?`, 'A new secret is issued; callers must switch to it.', true))) return;
		const rotated = await guarded(() => api.rotateKey(key.id, Number($('#grace').value)), '#console-error');
		if (rotated) showSecret(rotated.key);
	} else if (action === 'revoke') {
		if (!(await confirmAction(`Revoke ${key.name}?`, 'The key is refused from the next request on, on every replica. Its files and usage stay.'))) return;
		await guarded(() => api.revokeKey(key.id), '#console-error');
	}
	await refresh();
}

function wire() {
	$('#sign-in-form').addEventListener('submit', async (event) => {
		event.preventDefault();
		session.set($('#admin-key').value.trim());
		$('#admin-key').value = '';
		await signedIn();
	});
	$('#sign-out').addEventListener('click', () => signedOut());
	$('#new-key').addEventListener('click', () => openKeyForm(null));
	$('#range').addEventListener('change', () => guarded(renderUsage, '#console-error'));
	$('#refresh-jobs').addEventListener('click', () => guarded(renderJobs, '#console-error'));
	$('#keys').addEventListener('click', (event) => {
		const button = event.target.closest('button[data-action]');
		const key = button && keys.find((each) => each.id === button.dataset.id);
		if (key) void act(button.dataset.action, key);
	});
	$('#key-form').addEventListener('submit', async (event) => {
		event.preventDefault();
		const fields = fieldsOf(event.target);
		const saved = await guarded(() => (editing ? api.updateKey(editing.id, fields) : api.createKey(fields)), '#key-form-error');
		if (!saved) return;
		$('#key-dialog').close();
		if (saved.key) showSecret(saved.key);
		await refresh();
	});
	$('#copy-secret').addEventListener('click', async () => {
		try {
			await navigator.clipboard.writeText($('#secret').textContent);
			$('#copied').textContent = 'Copied to the clipboard.';
		} catch {
			getSelection().selectAllChildren($('#secret'));
			$('#copied').textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
		}
	});
	$('#secret-dialog').addEventListener('close', () => ($('#secret').textContent = ''));
	for (const button of document.querySelectorAll('[data-close]')) button.addEventListener('click', () => button.closest('dialog').close());
}

wire();
if (session.get()) void signedIn();
else signedOut();
