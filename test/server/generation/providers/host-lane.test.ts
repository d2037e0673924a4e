/**
 * HostLane: one call at a time to a host, in the order the callers came; a caller that stops
 * waiting leaves the line and never gets a turn.
 */
import { HostLane, laneOf } from '../../../../server/src/generation/providers/host-lane';

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('turns in the order the callers came, one at a time', async () => {
	const lane = new HostLane();
	const order: string[] = [];
	const endFirst = await lane.enter(new AbortController().signal);
	const second = lane.enter(new AbortController().signal).then((end) => (order.push('second'), end));
	const third = lane.enter(new AbortController().signal).then((end) => (order.push('third'), end));
	await settle();
	expect(order).toEqual([]);
	expect(lane.waiting).toBe(2);
	endFirst();
	const endSecond = await second;
	await settle();
	expect(order).toEqual(['second']);
	endSecond();
	(await third)();
	expect(order).toEqual(['second', 'third']);
	expect(lane.waiting).toBe(0);
});

test('a caller arriving while the turn is handed over waits behind the one it was handed to', async () => {
	const lane = new HostLane();
	const endFirst = await lane.enter(new AbortController().signal);
	const second = lane.enter(new AbortController().signal);
	endFirst();
	let lateGotIn = false;
	const late = lane.enter(new AbortController().signal).then((end) => ((lateGotIn = true), end));
	const endSecond = await second;
	await settle();
	expect(lateGotIn).toBe(false);
	endSecond();
	(await late)();
});

test('a caller whose signal aborts while it waits leaves the line with the reason, and the next caller gets its turn', async () => {
	const lane = new HostLane();
	const endFirst = await lane.enter(new AbortController().signal);
	const leaving = new AbortController();
	const left = lane.enter(leaving.signal);
	let stayingGotIn = false;
	const staying = lane.enter(new AbortController().signal).then((end) => ((stayingGotIn = true), end));
	leaving.abort(new Error('client gone'));
	await expect(left).rejects.toThrow('client gone');
	expect(lane.waiting).toBe(1);
	endFirst();
	(await staying)();
	expect(stayingGotIn).toBe(true);
});

test('an aborted signal never enters; ending a turn twice hands over only once', async () => {
	const lane = new HostLane();
	await expect(lane.enter(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
	const endFirst = await lane.enter(new AbortController().signal);
	const second = lane.enter(new AbortController().signal);
	const third = lane.enter(new AbortController().signal);
	endFirst();
	endFirst();
	await second;
	await settle();
	expect(lane.waiting).toBe(1);
	void third;
});

test('one lane per host key', () => {
	expect(laneOf('http://gpu-a:7860')).toBe(laneOf('http://gpu-a:7860'));
	expect(laneOf('http://gpu-a:7860')).not.toBe(laneOf('http://gpu-b:7860'));
});
