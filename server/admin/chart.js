// Spend per UTC day per key as stacked bars, drawn with uPlot (served by the service itself).

const PALETTE = ['#3158d4', '#0f7b4a', '#b54708', '#7a2e9e', '#c4320a', '#0e7490', '#4d7c0f', '#9d174d'];
const DAY_SECONDS = 86_400;

/** Every UTC day from `from` to today, as YYYY-MM-DD. */
export function daysSince(from) {
	const days = [];
	for (let at = Date.parse(`${from}T00:00:00Z`); at <= Date.now(); at += DAY_SECONDS * 1000) days.push(new Date(at).toISOString().slice(0, 10));
	return days;
}

/** rows: [{ date, key_id, cost_usd }] → one series per key over `days`. */
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

/**
 * uPlot is loaded on first use, not imported statically: its module can throw while it is
 * evaluated (it formats numbers for navigator.language, and Intl refuses tags such as
 * "en-US@posix" that Chromium reports under LANG=C.UTF-8), and a static import would then stop the
 * whole page. Loaded this way, only the chart is missing.
 */
let library = null;
const loadUPlot = () => (library ??= import('/admin/assets/uPlot.esm.js').then((module) => module.default));

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
			axes: [{ stroke: '#667085', grid: { stroke: '#eef0f3' } }, { stroke: '#667085', grid: { stroke: '#eef0f3' }, values: (_u, ticks) => ticks.map((tick) => `$${tick.toFixed(tick < 1 ? 3 : 2)}`), size: 64 }],
			// Opaque fills: a bar drawn over another must hide it, not blend with it.
			series: [{}, ...layers.map((layer) => ({ label: layer.label, stroke: '#ffffff', fill: PALETTE[layer.index % PALETTE.length], width: 1, paths: bars, points: { show: false }, value: (_u, _v, _series, day) => (day == null ? '–' : `$${layer.values[day].toFixed(4)}`) }))],
		},
		[x, ...layers.map((layer) => layer.tops)],
		container,
	);
}
