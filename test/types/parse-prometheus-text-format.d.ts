/** The parts of parse-prometheus-text-format the tests use (it ships no types); output as prom2json's. */
declare module 'parse-prometheus-text-format' {
	interface Sample {
		value?: string;
		labels?: Record<string, string>;
		/** Histograms: upper bound → cumulative count. */
		buckets?: Record<string, string>;
		count?: string;
		sum?: string;
	}
	interface MetricFamily {
		name: string;
		help: string;
		type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
		metrics: Sample[];
	}
	export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
