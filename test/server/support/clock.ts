/**
 * A fake clock for expiry and sweeping: Jest's fake `Date` and interval timers, while timeouts,
 * immediates and I/O stay real, so requests over loopback still flow. Install it before the service
 * is built (it reads `Date.now` then) and move time with `jest.advanceTimersByTime`, which also
 * fires the sweeper's interval; `jest.useRealTimers()` afterwards.
 */
export function useFakeClock(): void {
	jest.useFakeTimers({ doNotFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'nextTick', 'queueMicrotask', 'hrtime', 'performance'] });
}
