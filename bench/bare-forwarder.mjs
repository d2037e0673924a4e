// Baseline for the generation benchmark: a bare Fastify route that forwards the request body to
// the upstream and answers what it got, with no validation, dispatch or storage.
import Fastify from 'fastify';

const upstream = process.argv[2];
const app = Fastify({ logger: false });
app.post('/v1/images/generations', async (request, reply) => {
	const answer = await fetch(`${upstream}/v1/images/generations`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: request.headers.authorization ?? '' },
		body: JSON.stringify(request.body),
	});
	return reply.code(answer.status).send(await answer.json());
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening on ${address}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
