/**
 * The operator's kit as checked in under monitoring/: the alert rules, their promtool tests, the
 * Grafana dashboard and the compose provisioning, read from the repository, and every PromQL
 * expression in them with where it stands.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// The YAML parser @fastify/swagger (a dependency of the server) brings; promtool, Prometheus and Grafana read these files as YAML 1.2 too.
import { parse as parseYaml } from 'yaml';

export const ROOT = join(__dirname, '..', '..', '..');
export const RULES_FILE = 'monitoring/prometheus/imagegen-alerts.yml';
export const RULE_TESTS_FILE = 'monitoring/prometheus/imagegen-alerts.test.yml';
export const DASHBOARD_FILE = 'monitoring/grafana/imagegen-dashboard.json';

export const readText = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
export const readYaml = (path: string): any => parseYaml(readText(path));

export interface AlertRule {
	alert: string;
	expr: string;
	for?: string;
	labels?: Record<string, string>;
	annotations?: Record<string, string>;
}

export function alertRules(): AlertRule[] {
	const { groups } = readYaml(RULES_FILE) as { groups: Array<{ name: string; rules: AlertRule[] }> };
	return groups.flatMap((group) => group.rules);
}

export interface RuleTest {
	name?: string;
	input_series: Array<{ series: string; values: string }>;
	promql_expr_test?: Array<{ expr: string; eval_time: string; exp_samples: Array<{ labels: string; value: number }> }>;
	alert_rule_test?: Array<{ eval_time: string; alertname: string; exp_alerts: Array<{ exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }> }>;
}

export function ruleTests(): { rule_files: string[]; tests: RuleTest[] } {
	return readYaml(RULE_TESTS_FILE);
}

export interface DashboardPanel {
	id: number;
	type: string;
	title: string;
	datasource?: { type?: string; uid?: string };
	gridPos: { h: number; w: number; x: number; y: number };
	targets?: Array<{ refId: string; expr: string; datasource?: { type?: string; uid?: string } }>;
}

export interface Dashboard {
	uid: string;
	title: string;
	panels: DashboardPanel[];
	templating: { list: Array<{ name: string; type: string; query: string; datasource?: { type?: string; uid?: string } }> };
}

export const dashboard = (): Dashboard => JSON.parse(readText(DASHBOARD_FILE));

export interface Expression {
	/** Where it stands, for a failure's message. */
	where: string;
	expr: string;
}

/** A query variable's `label_values(<selector>, <label>)`: Grafana's, not PromQL; its selector is. */
const LABEL_VALUES = /^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/;

export function labelValuesQuery(query: string): { selector: string; label: string } | undefined {
	const match = LABEL_VALUES.exec(query.trim());
	return match ? { selector: match[1]!, label: match[2]! } : undefined;
}

export function allExpressions(): Expression[] {
	const rules = alertRules().map(({ alert, expr }) => ({ where: `${RULES_FILE}: ${alert}`, expr }));
	const tests = ruleTests().tests.flatMap((test, index) => [
		...test.input_series.map(({ series }) => ({ where: `${RULE_TESTS_FILE}: test ${index + 1}, input series`, expr: series })),
		...(test.promql_expr_test ?? []).flatMap(({ expr, exp_samples }) => [
			{ where: `${RULE_TESTS_FILE}: test ${index + 1}, promql_expr_test`, expr },
			...exp_samples.map(({ labels }) => ({ where: `${RULE_TESTS_FILE}: test ${index + 1}, exp_samples`, expr: labels })),
		]),
	]);
	const { panels, templating } = dashboard();
	const targets = panels.flatMap((panel) => (panel.targets ?? []).map(({ refId, expr }) => ({ where: `${DASHBOARD_FILE}: "${panel.title}" ${refId}`, expr })));
	const variables = templating.list.flatMap(({ name, query }) => {
		const labelValues = typeof query === 'string' ? labelValuesQuery(query) : undefined;
		return labelValues ? [{ where: `${DASHBOARD_FILE}: variable ${name}`, expr: labelValues.selector }] : [];
	});
	return [...rules, ...tests, ...targets, ...variables];
}
