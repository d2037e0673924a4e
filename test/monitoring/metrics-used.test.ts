/**
 * Every PromQL expression of the operator's kit — the alert rules, the series and expressions of
 * their promtool tests, the dashboard's panels and variables — parses with the Prometheus
 * project's grammar, and reads only metrics, labels and label values that the service's own
 * /metrics exports after it has served uploads, generations, a failing host, a webhook, a budget
 * spent (its alerts sent) and refused. promtool itself is not needed here (docs/operations.md says how to run it).
 */
import { startLiveMetrics, type LiveMetrics } from './support/live-metrics';
import { problemsOf } from './support/metric-check';
import { allExpressions } from './support/monitoring-files';
import { asSentByGrafana, readPromql } from './support/promql';

const expressions = allExpressions().map(({ where, expr }) => ({ where, expr: asSentByGrafana(expr) }));

describe('every expression', () => {
	test('is PromQL', () => {
		const failures = expressions.flatMap(({ where, expr }) => {
			try {
				readPromql(expr);
				return [];
			} catch (error) {
				return [`${where}: ${(error as Error).message}`];
			}
		});
		expect(failures).toEqual([]);
		// Rules, promtool inputs, dashboard targets and variables: all of them were found.
		for (const source of ['imagegen-alerts.yml:', 'imagegen-alerts.test.yml:', 'imagegen-dashboard.json: "', 'imagegen-dashboard.json: variable']) {
			expect(expressions.filter(({ where }) => where.includes(source)).length).toBeGreaterThan(1);
		}
	});

	test('a broken one is refused, naming where', () => {
		expect(() => readPromql('sum by (job) (rate(imagegen_http_requests_total[5m])')).toThrow(/not PromQL at character/);
		expect(() => readPromql('histogram_quantil(0.95, imagegen_http_request_duration_seconds_bucket)')).toThrow(/not PromQL/);
		expect(() => readPromql('rate(imagegen_http_requests_total[$__rate_interval])')).toThrow(/not PromQL/);
		expect(() => readPromql(asSentByGrafana('rate(imagegen_http_requests_total[$__rate_interval])'))).not.toThrow();
	});
});

describe('against a live /metrics', () => {
	let live: LiveMetrics;

	beforeAll(async () => {
		live = await startLiveMetrics();
	});

	afterAll(async () => {
		await live?.stop();
	});

	test('every metric, label and value they read is exported', () => {
		const problems = expressions.flatMap(({ where, expr }) => problemsOf(expr, live).map((problem) => `${where}: ${problem}`));
		expect(problems).toEqual([]);
	});

	test('the traffic made every family they read carry samples', () => {
		const read = new Set(expressions.flatMap(({ expr }) => readPromql(expr).selectors.map(({ metric }) => metric?.replace(/_(bucket|sum|count)$/, ''))));
		const empty = [...live.families].filter(([name, family]) => read.has(name) && family.samples === 0).map(([name]) => name);
		expect(empty).toEqual([]);
		for (const family of ['imagegen_provider_errors_total', 'imagegen_webhook_deliveries_total', 'imagegen_webhook_outbox_pending', 'imagegen_budget_refusals_total', 'imagegen_budget_alerts_total', 'imagegen_database_condition', 'imagegen_database_up', 'imagegen_data_dir_free_bytes', 'imagegen_data_dir_size_bytes']) {
			expect([family, read.has(family)]).toEqual([family, true]);
		}
	});

	test('what the check catches: an unknown metric, a label it lacks, a misspelt value, a grouping by nothing, an unknown route', () => {
		expect(problemsOf('rate(imagegen_http_request_total[5m])', live)).toEqual(['imagegen_http_request_total is not in /metrics']);
		expect(problemsOf('imagegen_http_requests_total{model="p-image"}', live)).toEqual(['imagegen_http_requests_total has no label model']);
		expect(problemsOf('imagegen_generations_total{outcome="sucess"}', live)).toEqual(['imagegen_generations_total{outcome="sucess"}: the service gives no such outcome']);
		expect(problemsOf('imagegen_webhook_deliveries_total{outcome=~"failed|droped"}', live)).toEqual(['imagegen_webhook_deliveries_total{outcome="droped"}: the service gives no such outcome']);
		expect(problemsOf('sum by (provider) (rate(imagegen_http_requests_total[5m]))', live)).toEqual(['groups by provider, which none of imagegen_http_requests_total carries']);
		expect(problemsOf('imagegen_http_requests_total{route="/v1/images/generation"}', live)).toEqual(['imagegen_http_requests_total{route="/v1/images/generation"}: the service gives no such route']);
		expect(problemsOf('imagegen_uploads_total_count', live)).toEqual(['imagegen_uploads_total_count is not in /metrics']);
		expect(problemsOf('imagegen_marking_duration_seconds_sum{le="1"}', live)).toEqual(['imagegen_marking_duration_seconds_sum has no label le']);
	});

	test('and what it lets through: histogram series, target labels, any HTTP status, declared models and providers', () => {
		const fine = [
			'histogram_quantile(0.99, sum by (job, route, le) (rate(imagegen_http_request_duration_seconds_bucket{route!~"/v1/uploads|/files/:name|unmatched"}[5m])))',
			'up{job="imagegen", instance="a:8080"} == 0',
			'imagegen_http_requests_total{status="507"}',
			'imagegen_generations_total{model="p-video", provider="replicate"}',
			'imagegen_provider_errors_total{code="upstream_rate_limited"}',
		];
		expect(fine.flatMap((expr) => problemsOf(expr, live))).toEqual([]);
	});
});
