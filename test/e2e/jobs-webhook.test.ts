/**
 * Generations as jobs end to end in a real n8n (`n8n start`, webhooks on): the example
 * examples/imagegen-jobs-submit-webhook.json, started by a Webhook trigger, submits a generation
 * with `{{ $execution.resumeUrl }}` as its Webhook URL; the execution pauses in the Wait node
 * until imagegen-server's signed webhook resumes it; Get Generation then turns the job into the
 * image. A last HTTP Request node reports the result to this test on loopback. n8n's resume URL
 * carries its `?signature=…`: the delivery reaches it only with the query string kept.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { freePort, INSTALL_TIMEOUT_MS, openSession, readExample, startEditor, type Editor, type Session } from './support/n8n';

const WORKFLOW_ID = 'imageGenJobsE2e01';
const TRIGGER_PATH = 'imagegen-jobs-e2e';
// Delivery is at least once, retried after 5 s, 30 s, 2 min…: a webhook that arrives before the
// execution is waiting is delivered again.
const REPORT_TIMEOUT_MS = 180_000;
const ADMIN_KEY = 'jobs-e2e-admin-key-0123456789';

interface Report {
	json: Record<string, unknown>;
	binary: { mimeType?: string; fileSize?: string } | null;
	webhook: { type?: string; status?: string; id?: string; signature?: string };
	submitted: Record<string, unknown>;
}

/** A loopback receiver for the workflow's last node. */
async function startReceiver(): Promise<{ url: string; next(): Promise<Report>; close(): Promise<void> }> {
	let deliver: (report: Report) => void = () => undefined;
	const received = new Promise<Report>((resolve) => (deliver = resolve));
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
			deliver(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Report);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`,
		next: () =>
			Promise.race([received, new Promise<Report>((_, reject) => setTimeout(() => reject(new Error('the workflow did not report within 180 s')), REPORT_TIMEOUT_MS).unref())]),
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** The example as the README offers it, started by a Webhook trigger instead of by hand, and reporting at the end. */
function workflow(reportUrl: string) {
	const example = readExample('imagegen-jobs-submit-webhook.json');
	const manual = example.nodes.find((node) => node.type === 'n8n-nodes-base.manualTrigger')!;
	const trigger = {
		id: randomUUID(),
		name: 'Start',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2,
		position: manual.position,
		webhookId: randomUUID(),
		parameters: { path: TRIGGER_PATH, httpMethod: 'GET', responseMode: 'onReceived', options: {} },
	};
	const report = {
		id: randomUUID(),
		name: 'Report',
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		position: [880, 0],
		parameters: {
			method: 'POST',
			url: reportUrl,
			sendBody: true,
			specifyBody: 'json',
			jsonBody: `={{ JSON.stringify({
				json: $json,
				binary: $binary.data ? { mimeType: $binary.data.mimeType, fileSize: $binary.data.fileSize } : null,
				webhook: { type: $('Wait for the webhook').item.json.body.type, status: $('Wait for the webhook').item.json.body.data.status, id: $('Wait for the webhook').item.json.body.data.id, signature: $('Wait for the webhook').item.json.headers['webhook-signature'] },
				submitted: $('Submit').item.json
			}) }}`,
			options: {},
		},
	};
	const connections = { ...example.connections } as Record<string, unknown>;
	connections[trigger.name] = connections[manual.name];
	delete connections[manual.name];
	connections['Get the image'] = { main: [[{ node: 'Report', type: 'main', index: 0 }]] };
	return { ...example, id: WORKFLOW_ID, nodes: [trigger, ...example.nodes.filter((node) => node !== manual), report], connections };
}

/** `imagegen_webhook_deliveries_total` by outcome, from the service's metrics. */
async function deliveryCounts(session: Session): Promise<Record<string, number>> {
	const response = await fetch(`${session.server.origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
	expect(response.status).toBe(200);
	const counts: Record<string, number> = {};
	for (const [, outcome, value] of (await response.text()).matchAll(/^imagegen_webhook_deliveries_total\{outcome="(\w+)"\} (\d+)$/gm)) counts[outcome!] = Number(value);
	return counts;
}

/** The errors of the webhook deliveries the service logged as failed and to be retried. */
function deliveryRetries(log: string): string[] {
	return log
		.split('\n')
		.filter((line) => line.includes('webhook delivery failed'))
		.map((line) => /"error":"([^"]*)"/.exec(line)?.[1] ?? line);
}

/**
 * Calls the workflow's Webhook trigger. n8n registers a published workflow's webhooks in the
 * background after start (its publication outbox), so the first calls may meet a 404.
 */
async function trigger(editor: Editor): Promise<Response> {
	for (const started = Date.now(); ; ) {
		const response = await fetch(`${editor.url}/webhook/${TRIGGER_PATH}`);
		if (response.status !== 404 || Date.now() - started > 120_000) return response;
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
}

describe('a Wait node resumed by the service’s webhook', () => {
	let session: Session;
	let editor: Editor;
	let receiver: Awaited<ReturnType<typeof startReceiver>>;

	beforeAll(async () => {
		// n8n's resume URL is on loopback: the service may deliver webhooks there.
		session = await openSession('jobs', ['--webhook-allow-private', '--admin-key', ADMIN_KEY]);
		receiver = await startReceiver();
		await session.importWorkflows([workflow(receiver.url)]);
		await session.cli(['publish:workflow', `--id=${WORKFLOW_ID}`]);
		const port = await freePort();
		editor = await startEditor(session.n8n, { userFolder: session.userFolder, port, env: { WEBHOOK_URL: `http://127.0.0.1:${port}/` } });
	}, INSTALL_TIMEOUT_MS);

	afterAll(async () => {
		await editor?.stop();
		await receiver?.close();
		await session?.close();
	});

	test(
		'Submit → Wait "On Webhook Call" → Get Generation: the image, after the signed generation.succeeded webhook',
		async () => {
			const started = await trigger(editor);
			expect(started.status).toBe(200);
			let report: Report;
			try {
				report = await receiver.next();
			} catch (error) {
				throw new Error(`${(error as Error).message}\n--- n8n log (last lines) ---\n${editor.output().split('\n').slice(-60).join('\n')}`);
			}
			expect(report.submitted).toMatchObject({ object: 'generation', id: expect.stringMatching(/^gen_/), status: expect.stringMatching(/^(queued|running)$/) });
			expect(report.webhook).toMatchObject({ type: 'generation.succeeded', status: 'succeeded', id: report.submitted.id, signature: expect.stringMatching(/^v1,/) });
			expect(report.json).toMatchObject({ model: 'p-image', outputFormat: 'png', mimeType: 'image/png' });
			expect(String(report.json.url).startsWith(`${session.server.origin}/files/`)).toBe(true);
			expect(report.binary?.mimeType).toBe('image/png');
			// A webhook that came before the execution was waiting is refused with 409 and sent again;
			// any other refusal (a resume URL cut short of its signature: 401) is a fault.
			const deliveries = await deliveryCounts(session);
			expect(deliveries).toMatchObject({ delivered: 1, failed: 0 });
			const retried = deliveryRetries(session.server.output());
			expect(retried).toHaveLength(deliveries.retried ?? 0);
			expect(retried.filter((error) => error !== 'the receiver answered HTTP 409')).toEqual([]);
			process.stderr.write(`[e2e] jobs: the webhook was delivered ${retried.length === 0 ? 'at the first attempt' : `after ${retried.length} refusal(s) with 409`}\n`);
		},
		REPORT_TIMEOUT_MS + 30_000,
	);
});
