/**
 * PromQL read with the Prometheus project's own grammar (@prometheus-io/lezer-promql, the parser
 * behind Prometheus' web UI): whether an expression parses, and what it reads — each series
 * selector with its metric name and label matchers, and the labels each aggregation or vector
 * match groups by, so a test can hold them against the metrics a live /metrics exports.
 */
import { parser } from '@prometheus-io/lezer-promql';

type Tree = ReturnType<typeof parser.parse>;
type SyntaxNode = Tree['topNode'];

export interface LabelMatcher {
	label: string;
	/** `=`, `!=`, `=~` or `!~`. */
	op: string;
	value: string;
}

export interface Selector {
	/** Undefined for a selector of labels only (`{job="x"}`). */
	metric: string | undefined;
	matchers: LabelMatcher[];
}

/** `by`/`without` of an aggregation, or `on`/`ignoring` of a vector match, with the selectors under it. */
export interface Grouping {
	labels: string[];
	selectors: Selector[];
}

export interface ReadExpression {
	selectors: Selector[];
	groupings: Grouping[];
}

/** Grafana's macros stand for a duration; PromQL itself has none of them. */
const GRAFANA_DURATIONS = /\$(?:__rate_interval|__interval|__range|\{__rate_interval\}|\{__interval\}|\{__range\})\b/g;

/** What Grafana sends to Prometheus for a panel's expression, with its macros as durations. */
export function asSentByGrafana(expression: string): string {
	return expression.replace(GRAFANA_DURATIONS, '5m');
}

/**
 * The expression read, or an error naming where the grammar stopped. The parser recovers from
 * errors (it is an editor's parser), so a tree with an error node is a failure here.
 */
export function readPromql(expression: string): ReadExpression {
	const tree = parser.parse(expression);
	const cursor = tree.cursor();
	do {
		if (cursor.type.isError) {
			throw new Error(`not PromQL at character ${cursor.from}: ${JSON.stringify(expression.slice(Math.max(0, cursor.from - 20), cursor.from + 20))}`);
		}
	} while (cursor.next());
	const top = tree.topNode;
	const text = (node: SyntaxNode) => expression.slice(node.from, node.to);
	return {
		selectors: descendants(top, 'VectorSelector').map((node) => selectorOf(node, text)),
		groupings: [...descendants(top, 'AggregateExpr'), ...descendants(top, 'BinaryExpr')].flatMap((node) => groupingOf(node, text)),
	};
}

function descendants(node: SyntaxNode, name: string): SyntaxNode[] {
	const found: SyntaxNode[] = [];
	for (let child = node.firstChild; child; child = child.nextSibling) {
		if (child.name === name) found.push(child);
		found.push(...descendants(child, name));
	}
	return found;
}

function selectorOf(node: SyntaxNode, text: (node: SyntaxNode) => string): Selector {
	const identifier = node.getChild('Identifier');
	const matchers = [...descendants(node, 'UnquotedLabelMatcher'), ...descendants(node, 'QuotedLabelMatcher')].map((matcher): LabelMatcher => {
		const name = matcher.getChild('LabelName') ?? matcher.getChild('QuotedLabelName')!;
		const values = matcher.getChildren('StringLiteral');
		return {
			label: name.name === 'QuotedLabelName' ? unquote(text(name)) : text(name),
			op: text(matcher.getChild('MatchOp')!),
			value: unquote(text(values.at(-1)!)),
		};
	});
	// UTF-8 names may stand quoted inside the braces, alone (`{"metric.name", job="x"}`).
	const quotedName = descendants(node, 'QuotedLabelName').find((each) => each.parent?.name !== 'QuotedLabelMatcher');
	const nameMatcher = matchers.find(({ label, op }) => label === '__name__' && op === '=');
	const metric = identifier ? text(identifier) : quotedName ? unquote(text(quotedName)) : nameMatcher?.value;
	return { metric, matchers: matchers.filter(({ label }) => label !== '__name__') };
}

function groupingOf(node: SyntaxNode, text: (node: SyntaxNode) => string): Grouping[] {
	const modifier = node.getChild('AggregateModifier') ?? node.getChild('MatchingModifierClause');
	const labels = modifier?.getChild('GroupingLabels');
	if (!labels) return [];
	return [{ labels: descendants(labels, 'LabelName').map(text), selectors: descendants(node, 'VectorSelector').map((each) => selectorOf(each, text)) }];
}

/** A PromQL string: double or single quotes with Go's escapes, or backticks with none. */
function unquote(literal: string): string {
	if (literal.startsWith('`')) return literal.slice(1, -1);
	const body = literal.slice(1, -1);
	const asDouble = literal.startsWith("'") ? body.replace(/\\'/g, "'").replace(/"/g, '\\"') : body;
	return JSON.parse(`"${asDouble}"`) as string;
}
