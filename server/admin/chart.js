// Spend per UTC day per key as stacked bars, drawn with uPlot (served by the service itself).
import { dayOf, usd } from '/admin/assets/format.js';

const PALETTE = ['#3158d4', '#0f7b4a', '#b54708', '#7a2e9e', '#c4320a', '#0e7490', '#4d7c0f', '#9d174d'];
const DAY_SECONDS = 86_400;

/** Every UTC day from `from` to today, as YYYY-MM-DD. */
export function daysSince(from) {
	const days = [];
	for (let at = Date.parse(`${from}T00:00:00Z`); at <= Date.now(); at += DAY_SECONDS * 1000) days.push(dayOf(new Date(at).toISOString()));
	return days;
}

/** rows: [{ date, key_id, cost_usd }] → one series per key over `days`. */
/** The period's images, seconds of video and spend per model, the costliest first. */
export function totalsByModel(rows) {
	const totals = new Map();
	for (const row of rows) {
		const total = totals.get(row.model) ?? { model: row.model, images: 0, seconds: 0, cost: 0 };
		total.images += row.images;
		total.seconds += row.seconds ?? 0;
		total.cost += row.cost_usd;
		totals.set(row.model, total);
	}
	return [...totals.values()].sort((a, b) => b.cost - a.cost || a.model.localeCompare(b.model));
}

export function seriesOf(rows, days, nameOf) {
	const perKey = new Map();
	for (const row of rows) {
		const costs = perKey.get(row.key_id) ?? new Map();
		costs.set(row.date, (costs.get(row.date) ?? 0) + row.cost_usd);
		perKey.set(row.key_id, costs);
	}
	return [...perKey.entries()].map(([keyId, costs]) => ({ label: nameOf(keyId), values: days.map((day) => costs.get(day) ?? 0) }));
}

/**
 * Stacks the series per day: each key's bar starts where the one below it ends. uPlot draws every
 * bar from zero, so each key is drawn up to its running total, the topmost first, and each bar
 * drawn later covers the lower part of those before it. `values` stay each key's own spend (shown
 * in the legend); `tops` is where its bar ends; `index` is its place in `series` (its colour).
 */
export function stacked(series) {
	const running = series[0]?.values.map(() => 0) ?? [];
	const withTops = series.map((each, index) => ({ ...each, index, tops: each.values.map((value, day) => (running[day] += value)) }));
	return withTops.reverse();
}

/** Whether Intl formats numbers for this language tag (it refuses "en-US@posix", for one). */
function intlTakes(tag) {
	try {
		new Intl.NumberFormat(tag);
		return true;
	} catch {
		return false;
	}
}

/**
 * The browser's language, or the nearest tag Intl takes: under LANG=C.UTF-8 Chromium reports
 * "en-US@posix", which Intl refuses; without the "@…" modifier it is "en-US"; else plain "en-US".
 */
export function usableLocale(tag) {
	return [tag, String(tag ?? '').split('@')[0], 'en-US'].find((candidate) => candidate && intlTakes(candidate));
}

/**
 * uPlot formats numbers for navigator.language while its module is evaluated, and throws on a tag
 * Intl refuses. So before it loads, such a tag is replaced (for this page only) by usableLocale's.
 * It is still loaded on first use, not imported statically: should it fail for another reason, only
 * the chart is missing, not the whole page.
 */
let library = null;
function loadUPlot() {
	const locale = usableLocale(navigator.language);
	if (locale !== navigator.language) Object.defineProperty(navigator, 'language', { value: locale, configurable: true });
	return (library ??= import('/admin/assets/uPlot.esm.js').then((module) => module.default));
}

let plot = null;

export async function drawSpend(container, days, series) {
	let uPlot;
	try {
		uPlot = series.length > 0 ? await loadUPlot() : null;
	} catch (error) {
		plot = null;
		container.replaceChildren(Object.assign(document.createElement('p'), { className: 'error', textContent: `The chart cannot be drawn in this browser (${error.message}); the keys and their spend above are complete.` }));
		return;
	}
	plot?.destroy();
	plot = null;
	container.replaceChildren();
	if (!uPlot) return;
	const bars = uPlot.paths.bars({ size: [0.7, 40], align: 0 });
	const layers = stacked(series);
	const width = Math.max(320, container.clientWidth);
	const x = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
	plot = new uPlot(
		{
			width,
			height: 260,
			tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
			// Half a day either side, so the first and last days' bars are drawn whole.
			scales: { x: { time: true, range: (_u, min, max) => [min - DAY_SECONDS / 2, max + DAY_SECONDS / 2] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] } },
			axes: [{ stroke: '#667085', grid: { stroke: '#eef0f3' } }, { stroke: '#667085', grid: { stroke: '#eef0f3' }, values: (_u, ticks) => ticks.map(usd), size: 72 }],
			// Opaque fills: a bar drawn over another must hide it, not blend with it.
			// The legend shows the hovered day, or with no day hovered the whole range and each key's total in it.
			series: [
				{ label: 'Day', value: (_u, _v, _series, day) => (day == null ? `${days[0]} – ${days.at(-1)}` : days[day]) },
				...layers.map((layer) => ({
					label: layer.label,
					stroke: '#ffffff',
					fill: PALETTE[layer.index % PALETTE.length],
					width: 1,
					paths: bars,
					points: { show: false },
					value: (_u, _v, _series, day) => usd(day == null ? layer.values.reduce((sum, value) => sum + value, 0) : layer.values[day]),
				})),
			],
		},
		[x, ...layers.map((layer) => layer.tops)],
		container,
	);
}
