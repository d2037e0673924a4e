/**
 * What a PromQL expression reads, held against a live /metrics: each metric exported and with
 * samples, each label it matches or groups by carried by those metrics, and each value it matches
 * literally one the service gives — a misspelt metric, label or value would otherwise make a
 * panel empty or an alert that can never fire, without any error.
 */
import { CATALOG_MODEL_IDS } from '../../../core/video-models';
import { PROVIDER_NAMES } from '../../../server/src/config/provider-selection';
import type { Family, LiveMetrics } from './live-metrics';
import { readPromql, type LabelMatcher, type Selector } from './promql';

/** Added by Prometheus to every series it scrapes. */
const SCRAPE_LABELS = ['job', 'instance'];
/** Prometheus' own series per target. */
const TARGET_SERIES = new Set(['up']);
/** Label values from closed sets the service declares, which one short run does not all produce. */
const DECLARED_VALUES: Record<string, readonly string[]> = { model: CATALOG_MODEL_IDS, provider: PROVIDER_NAMES };
/** Labels whose values are open (bucket bounds) or have a shape rather than a list (error codes). */
const VALUE_SHAPES: Record<string, RegExp> = { le: /^(\+Inf|\d+(\.\d+)?)$/, code: /^[a-z][a-z0-9_]*$/ };
/** A regex that is only literal alternatives, each checked as a value: `failed|dropped|expired`. */
const LITERAL_ALTERNATIVES = /^[A-Za-z0-9_:/-]+(\|[A-Za-z0-9_:/-]+)*$/;
const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

interface Resolved {
	metric: string;
	labels: Set<string>;
	family: Family | undefined;
}

export function problemsOf(expression: string, live: LiveMetrics): string[] {
	const { selectors, groupings } = readPromql(expression);
	const problems: string[] = [];
	const resolve = (selector: Selector): Resolved | undefined => {
		if (selector.metric === undefined) return undefined;
		const resolved = resolveMetric(selector.metric, live);
		if (typeof resolved === 'string') problems.push(resolved);
		return typeof resolved === 'string' ? undefined : resolved;
	};
	for (const selector of selectors) {
		const resolved = resolve(selector);
		if (resolved) for (const matcher of selector.matchers) problems.push(...matcherProblems(resolved, matcher, live));
	}
	for (const { labels, selectors: grouped } of groupings) {
		const carried = new Set([...SCRAPE_LABELS, ...grouped.flatMap((selector) => [...(resolveQuietly(selector, live)?.labels ?? [])])]);
		for (const label of labels.filter((each) => !carried.has(each))) problems.push(`groups by ${label}, which none of ${grouped.map(({ metric }) => metric).join(', ')} carries`);
	}
	return [...new Set(problems)];
}

function resolveQuietly(selector: Selector, live: LiveMetrics): Resolved | undefined {
	const resolved = selector.metric === undefined ? undefined : resolveMetric(selector.metric, live);
	return typeof resolved === 'object' ? resolved : undefined;
}

/** The family a metric name reads (a histogram's `_bucket`, `_sum` or `_count` included), or what is wrong. */
function resolveMetric(metric: string, live: LiveMetrics): Resolved | string {
	if (TARGET_SERIES.has(metric)) return { metric, labels: new Set(SCRAPE_LABELS), family: undefined };
	const own = live.families.get(metric);
	const base = live.families.get(metric.replace(HISTOGRAM_SERIES, ''));
	const family = own ?? (base?.type === 'HISTOGRAM' ? base : undefined);
	if (!family) return `${metric} is not in /metrics`;
	if (family.samples === 0) return `${metric} has no samples in /metrics after the traffic`;
	const labels = new Set([...SCRAPE_LABELS, ...family.labels.keys()]);
	if (family.type === 'HISTOGRAM' && !metric.endsWith('_bucket')) labels.delete('le');
	return { metric, labels, family };
}

function matcherProblems({ metric, labels, family }: Resolved, { label, op, value }: LabelMatcher, live: LiveMetrics): string[] {
	if (!labels.has(label)) return [`${metric} has no label ${label}`];
	if (SCRAPE_LABELS.includes(label) || value === '') return [];
	const literal = op === '=' || op === '!=';
	if (!literal && !LITERAL_ALTERNATIVES.test(value)) return [];
	const values = literal ? [value] : value.split('|');
	return values.filter((each) => !isKnownValue(label, each, family, live)).map((each) => `${metric}{${label}="${each}"}: the service gives no such ${label}`);
}

function isKnownValue(label: string, value: string, family: Family | undefined, live: LiveMetrics): boolean {
	if (label === 'route') return value === 'unmatched' || live.hasRoute(value);
	const shape = VALUE_SHAPES[label];
	if (shape) return shape.test(value);
	const seen = [...(family?.labels.get(label) ?? [])];
	// HTTP statuses: any code, not only those one short run answered.
	if (seen.length > 0 && seen.every((each) => /^[1-5]\d\d$/.test(each))) return /^[1-5]\d\d$/.test(value);
	return seen.includes(value) || (DECLARED_VALUES[label] ?? []).includes(value);
}
