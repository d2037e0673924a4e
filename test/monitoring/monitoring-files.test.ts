/**
 * The shape of the operator's kit, where no container engine or promtool runs: the dashboard is
 * importable as one (a `${datasource}` on every panel and query, unique ids, no overlapping
 * panels, targets everywhere), each alert has what Alertmanager routes and an operator reads (a
 * `for`, a severity, a summary, a description and a runbook that exists in docs/operations.md)
 * and a promtool test that makes it fire, and the compose profile's files parse and point at
 * files that exist, with the admin key reaching Prometheus the way the service takes it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_FILE, ROOT, RULES_FILE, alertRules, dashboard, labelValuesQuery, readText, readYaml, ruleTests } from './support/monitoring-files';

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

describe(DASHBOARD_FILE, () => {
	const { uid, title, panels, templating } = dashboard();
	const queried = panels.filter(({ type }) => type !== 'row');

	test('a uid, a title and panels with unique ids', () => {
		expect(uid).toMatch(/^[a-z0-9-]{1,40}$/);
		expect(title).toBeTruthy();
		expect(queried.length).toBeGreaterThan(20);
		const ids = panels.map(({ id }) => id);
		expect(new Set(ids).size).toBe(ids.length);
	});

	test('every panel and every target reads the ${datasource} variable, with at least one target', () => {
		const wrong = queried.filter(({ datasource, targets }) => JSON.stringify(datasource) !== JSON.stringify(DATASOURCE) || !targets?.length || targets.some((target) => target.datasource !== undefined && JSON.stringify(target.datasource) !== JSON.stringify(DATASOURCE)));
		expect(wrong.map(({ title: name }) => name)).toEqual([]);
		for (const { targets } of queried) {
			expect(targets!.every(({ expr }) => typeof expr === 'string' && expr.trim() !== '')).toBe(true);
			expect(new Set(targets!.map(({ refId }) => refId)).size).toBe(targets!.length);
		}
	});

	test('variables: a Prometheus data source, then job and instance read from the service’s metrics', () => {
		const byName = new Map(templating.list.map((variable) => [variable.name, variable]));
		expect(byName.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
		for (const name of ['job', 'instance']) {
			expect(byName.get(name)).toMatchObject({ type: 'query', datasource: DATASOURCE });
			expect(labelValuesQuery(byName.get(name)!.query)).toMatchObject({ label: name });
		}
		// Every `$name` a query uses is a variable of the dashboard or one of Grafana's macros.
		const used = JSON.stringify(panels).match(/\$\{?(\w+)/g)!.map((each) => each.replace(/^\$\{?/, ''));
		expect(used.filter((name) => !byName.has(name) && !['__rate_interval', '__interval', '__range'].includes(name))).toEqual([]);
	});

	test('panels sit on the 24-column grid without overlapping', () => {
		const cells = new Set<string>();
		for (const { title: name, gridPos } of panels) {
			expect([name, gridPos.x + gridPos.w <= 24 && gridPos.x >= 0 && gridPos.w > 0 && gridPos.h > 0]).toEqual([name, true]);
			for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
				for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
					expect([name, cells.has(`${x},${y}`)]).toEqual([name, false]);
					cells.add(`${x},${y}`);
				}
			}
		}
	});
});

describe(RULES_FILE, () => {
	const rules = alertRules();
	const operations = readText('docs/operations.md');
	/** GitHub's anchors: lower case, punctuation but hyphens dropped, spaces as hyphens. */
	const anchors = new Set([...operations.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => heading!.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')));

	test('alerts only, with unique names', () => {
		expect(rules.length).toBeGreaterThan(10);
		expect(rules.every(({ alert }) => /^ImageGen[A-Z]\w+$/.test(alert))).toBe(true);
		expect(new Set(rules.map(({ alert }) => alert)).size).toBe(rules.length);
	});

	test('each has a for, a severity, a summary, a description and a runbook in docs/operations.md', () => {
		for (const { alert, for: pending, labels, annotations } of rules) {
			expect([alert, pending]).toEqual([alert, expect.stringMatching(/^\d+[smh]$/)]);
			expect([alert, labels?.severity]).toEqual([alert, expect.stringMatching(/^(critical|warning|info)$/)]);
			expect([alert, annotations?.summary?.length, annotations?.description?.length]).toEqual([alert, expect.any(Number), expect.any(Number)]);
			expect([alert, annotations?.runbook_url]).toEqual([alert, `docs/operations.md#${alert.toLowerCase()}`]);
			expect([alert, anchors.has(alert.toLowerCase())]).toEqual([alert, true]);
		}
	});

	test('what the design asks for is covered: errors, latency, hosts, webhooks, budgets, disk, database, a target down', () => {
		const exprs = rules.map(({ expr }) => expr).join('\n');
		for (const metric of [
			'up{job="imagegen"}',
			'status=~"5.."',
			'imagegen_http_request_duration_seconds_bucket',
			'imagegen_generation_duration_seconds_bucket',
			'imagegen_provider_errors_total',
			'imagegen_webhook_deliveries_total',
			'imagegen_webhook_outbox_pending',
			'imagegen_budget_refusals_total',
			'status="507"',
			'imagegen_data_dir_free_bytes',
			'imagegen_data_dir_size_bytes',
			'imagegen_database_condition{state="full"}',
			'imagegen_database_condition{state="damaged"}',
			'imagegen_database_up',
			'route="/healthz"',
			'imagegen_usage_ledger_pending',
			'imagegen_last_sweep_success_timestamp_seconds',
		]) {
			expect([metric, exprs.includes(metric)]).toEqual([metric, true]);
		}
	});

	test('each has a promtool test in which it fires, and one in which it stays quiet', () => {
		const { rule_files, tests } = ruleTests();
		expect(rule_files).toEqual(['imagegen-alerts.yml']);
		const cases = tests.flatMap((test) => test.alert_rule_test ?? []);
		for (const { alert } of rules) {
			expect([alert, cases.some(({ alertname, exp_alerts }) => alertname === alert && exp_alerts.length > 0)]).toEqual([alert, true]);
			expect([alert, cases.some(({ alertname, exp_alerts }) => alertname === alert && exp_alerts.length === 0)]).toEqual([alert, true]);
		}
		expect(cases.filter(({ alertname }) => !rules.some(({ alert }) => alert === alertname))).toEqual([]);
	});
});

describe('docker-compose.yml, profile monitoring', () => {
	const compose = readYaml('docker-compose.yml');
	const { prometheus, grafana, imagegen } = compose.services;
	/** A service's bind mounts from the repository: its path there → its path in the container. */
	const binds = (service: { volumes: string[] }) => new Map(service.volumes.filter((volume) => volume.startsWith('./')).map((volume) => [volume.split(':')[0]!.slice(2), volume.split(':')[1]!]));

	test('Prometheus and Grafana start only with the profile, from pinned images', () => {
		for (const service of [prometheus, grafana]) {
			expect(service.profiles).toEqual(['monitoring']);
			expect(service.image).toMatch(/^[a-z/]+:v?\d+\.\d+\.\d+$/);
		}
		expect(imagegen.profiles).toBeUndefined();
	});

	test('every file they mount is in the repository', () => {
		for (const service of [prometheus, grafana]) {
			for (const source of binds(service).keys()) expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
		}
	});

	test('Prometheus scrapes the imagegen service with the admin key, as a secret file, and loads the alert rules', () => {
		const mounted = binds(prometheus);
		const config = readYaml('monitoring/prometheus/prometheus.yml');
		expect(mounted.get('monitoring/prometheus/prometheus.yml')).toBe('/etc/prometheus/prometheus.yml');
		expect(config.rule_files).toEqual([mounted.get(RULES_FILE)]);
		const [job] = config.scrape_configs;
		expect(job).toMatchObject({ job_name: 'imagegen', metrics_path: '/metrics', static_configs: [{ targets: ['imagegen:8080'] }] });
		expect(Object.keys(compose.services)).toContain('imagegen');
		// The key: the variable the service reads, handed to Prometheus as /run/secrets/<name>.
		expect(job.authorization.type).toBe('Bearer');
		const secret = job.authorization.credentials_file.replace('/run/secrets/', '');
		expect(prometheus.secrets).toEqual([secret]);
		expect(compose.secrets[secret]).toEqual({ environment: 'IMAGEGEN_ADMIN_KEY' });
		expect(imagegen.environment.IMAGEGEN_ADMIN_KEY).toBe('${IMAGEGEN_ADMIN_KEY:-}');
	});

	test('Grafana has that Prometheus as its data source and the dashboard from its folder', () => {
		const mounted = binds(grafana);
		const provisioning = mounted.get('monitoring/grafana/provisioning');
		expect(provisioning).toBe('/etc/grafana/provisioning');
		const { apiVersion, datasources } = readYaml('monitoring/grafana/provisioning/datasources/prometheus.yml');
		expect(apiVersion).toBe(1);
		expect(datasources).toEqual([expect.objectContaining({ type: 'prometheus', access: 'proxy', url: 'http://prometheus:9090', isDefault: true })]);
		expect(prometheus.ports).toContain('9090:9090');
		const { providers } = readYaml('monitoring/grafana/provisioning/dashboards/imagegen.yml');
		expect(providers).toEqual([expect.objectContaining({ type: 'file', options: expect.objectContaining({ path: expect.any(String) }) })]);
		expect(mounted.get(DASHBOARD_FILE)).toBe(`${providers[0].options.path}/imagegen-dashboard.json`);
	});
});
