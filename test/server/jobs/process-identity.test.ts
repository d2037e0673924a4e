/** A job's holder names its machine and process, so a restart here knows a predecessor that is gone. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { holderGone, holderStopped, processHolder } from '../../../server/src/jobs/process-identity';

const sameMachineAs = (holder: string, pid: number) => holder.replace(/\/\d+\/([^/]+)$/, `/${pid}/$1`);

test('a holder of this machine whose process has ended is gone; a live one, ourselves and another machine are not', async () => {
	const self = processHolder();
	const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
	await once(child, 'spawn');
	const living = sameMachineAs(processHolder(), child.pid!);
	expect(holderGone(living, self)).toBe(false);
	child.kill('SIGKILL');
	await once(child, 'exit');
	expect(holderGone(living, self)).toBe(true);
	expect(holderGone(self, self)).toBe(false);
	// A container restarted gives the new service its predecessor's pid: another start of this pid is gone.
	expect(holderGone(sameMachineAs(self, process.pid).replace(/[^/]+$/, 'a-start-before-this-one'), self)).toBe(true);
	expect(holderGone(`another-machine/${child.pid}/x`, self)).toBe(false);
	expect(holderGone('0f7c3a4e-2b7d-4a55-9b1e-1d2c3b4a5f6e', self)).toBe(false);
});

test('another service running in this process is not gone; once it stopped, its jobs may be taken over', () => {
	const self = processHolder();
	const neighbour = processHolder();
	expect(holderGone(neighbour, self)).toBe(false);
	holderStopped(neighbour);
	expect(holderGone(neighbour, self)).toBe(true);
});
