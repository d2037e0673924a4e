/**
 * GET /metrics with the admin key, read back with a Prometheus text parser: a sample's value by its
 * family and labels (NaN as Prometheus writes it), and which families the text has.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { call } from '../../support/http';

type Families = ReturnType<typeof parsePrometheusTextFormat>;

export interface Scrape {
	text: string;
	/** The first sample of `name` carrying every label of `labels`; undefined when there is none. */
	value(name: string, labels?: Record<string, string>): number | undefined;
	/** Every sample of `name`, as its labels and value. */
	samples(name: string): Array<{ labels: Record<string, string>; value: number }>;
	has(name: string): boolean;
}

export async function scrape(server: { origin: string; apiKey: string }, adminKey: string): Promise<Scrape> {
	const answer = await call<string>(server, '/metrics', { auth: `Bearer ${adminKey}` });
	if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}`);
	return readScrape(answer.body);
}

export function readScrape(text: string): Scrape {
	const families: Families = parsePrometheusTextFormat(text);
	const samples = (name: string) =>
		(families.find((family) => family.name === name)?.metrics ?? []).map((sample) => ({ labels: sample.labels ?? {}, value: Number(sample.value) }));
	return {
		text,
		samples,
		value: (name, labels = {}) => samples(name).find((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))?.value,
		has: (name) => families.some((family) => family.name === name),
	};
}
