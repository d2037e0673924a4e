/**
 * `kill -9` in the middle of a mixed load on the data dir's database (uploads, generations, key
 * changes), at several moments: after a restart every acknowledged upload is served byte for byte,
 * usage counts every acknowledged generation (and at most those still in flight besides), every
 * acknowledged key change is there, and nothing half-written is left: each byte file belongs to a
 * published row of its exact size, and each published row has its bytes.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startServer, type RunningServer } from '../../../helpers/server';
import { call, callAs, postJson, uploadFile } from '../../support/http';
import { makeMp4, patterned } from '../../support/media';

jest.setTimeout(120_000);

const ADMIN_KEY = 'crash-safety-admin-key-0123456789';
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A managed key as the load saw it: the names it may have now (the last acknowledged, one in flight). */
interface KeySeen {
	acknowledged: string;
	inFlight?: string;
	revoked: boolean;
	revokeInFlight: boolean;
}

interface Acknowledged {
	uploads: { url: string; sha256: string }[];
	generations: number;
	generationsInFlight: number;
	keys: Map<string, KeySeen>;
}

/** Runs the load until `stop` is set; every answer that arrived is recorded as acknowledged. */
function startLoad(server: RunningServer, state: Acknowledged, stop: { now: boolean }): Promise<unknown> {
	let serial = 0;
	const uploads = async () => {
		while (!stop.now) {
			const bytes = makeMp4(4096 + (serial++ % 7) * 1024);
			patterned(64, serial).copy(bytes, bytes.length - 64);
			const answer = await uploadFile(server, bytes, {}, { fileName: 'clip.mp4' }).catch(() => null);
			if (answer?.status === 200) state.uploads.push({ url: answer.body.videoUrl, sha256: sha256(bytes) });
		}
	};
	const generations = async () => {
		while (!stop.now) {
			state.generationsInFlight++;
			const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: `crash ${serial++}` }).catch(() => null);
			state.generationsInFlight--;
			if (answer?.status === 200) state.generations++;
		}
	};
	const keyChanges = async () => {
		while (!stop.now) {
			const created = await postJson(server, '/v1/admin/keys', { name: `key ${serial++}` }, { auth: `Bearer ${ADMIN_KEY}` }).catch(() => null);
			if (created?.status !== 201) continue;
			const key: KeySeen = { acknowledged: created.body.name, revoked: false, revokeInFlight: false };
			state.keys.set(created.body.id, key);
			key.inFlight = `renamed ${serial++}`;
			// A request that got no answer (the process died under it) may or may not have been applied.
			const renamed = await callAs(server, 'PATCH', `/v1/admin/keys/${created.body.id}`, ADMIN_KEY, { name: key.inFlight }).catch(() => null);
			if (renamed === null) continue;
			if (renamed.status === 200) key.acknowledged = key.inFlight;
			key.inFlight = undefined;
			if (serial % 2 === 0) {
				key.revokeInFlight = true;
				const revoked = await callAs(server, 'DELETE', `/v1/admin/keys/${created.body.id}`, ADMIN_KEY).catch(() => null);
				if (revoked === null) continue;
				if (revoked.status === 204) key.revoked = true;
				key.revokeInFlight = false;
			}
		}
	};
	return Promise.all([uploads(), uploads(), generations(), generations(), keyChanges()]);
}

/** Each byte file has a published row of its size, and each published row its bytes. */
function checkNothingHalfWritten(dataDir: string): void {
	const database = new Database(join(dataDir, 'imagegen.db'), { readonly: true });
	try {
		expect(database.pragma('integrity_check', { simple: true })).toBe('ok');
		const rows = database.prepare('SELECT storage_key, size, published FROM files').all() as { storage_key: string; size: number | null; published: number }[];
		const published = new Map(rows.filter((row) => row.published === 1).map((row) => [row.storage_key, row.size]));
		const onDisk = readdirSync(join(dataDir, 'files'));
		for (const name of onDisk) {
			expect([name, published.has(name)]).toEqual([name, true]);
			expect(statSync(join(dataDir, 'files', name)).size).toBe(published.get(name));
		}
		expect(new Set(onDisk)).toEqual(new Set(published.keys()));
	} finally {
		database.close();
	}
}

test.each([350, 900, 1_600])('killed with SIGKILL %i ms into a mixed load (after its first answer), a restart keeps everything acknowledged', async (afterMs) => {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-crash-'));
	const args = ['--admin-key', ADMIN_KEY, '--rate-limit-per-minute', '0'];
	try {
		const first = await startServer({ dataDir, args });
		const state: Acknowledged = { uploads: [], generations: 0, generationsInFlight: 0, keys: new Map() };
		const stop = { now: false };
		const load = startLoad(first, state, stop);
		// Counted from the load's first answer, not its start: on a busy machine the first answer
		// (sharp loading, the first image drawn) may itself take longer than the shortest wait.
		const acknowledged = () => state.uploads.length + state.generations + state.keys.size > 0;
		for (const startedAt = Date.now(); !acknowledged() && Date.now() - startedAt < 30_000; ) await new Promise((resolve) => setTimeout(resolve, 10));
		await new Promise((resolve) => setTimeout(resolve, afterMs));
		const inFlightAtKill = state.generationsInFlight;
		await first.stop({ signal: 'SIGKILL' });
		stop.now = true;
		await load;
		expect(acknowledged()).toBe(true);

		const second = await startServer({ dataDir, args });
		try {
			for (const upload of state.uploads) {
				const response = await fetch(`${second.origin}${new URL(upload.url).pathname}`);
				expect([upload.url, response.status]).toEqual([upload.url, 200]);
				expect(sha256(Buffer.from(await response.arrayBuffer()))).toBe(upload.sha256);
			}

			const usage = await call(second, '/v1/usage');
			expect(usage.status).toBe(200);
			const counted = usage.body.total?.images ?? 0;
			expect(counted).toBeGreaterThanOrEqual(state.generations);
			expect(counted).toBeLessThanOrEqual(state.generations + inFlightAtKill);

			const listed = await call(second, '/v1/admin/keys', { auth: `Bearer ${ADMIN_KEY}` });
			expect(listed.status).toBe(200);
			const names = new Map<string, string>(listed.body.data.map((key: { id: string; name: string }) => [key.id, key.name]));
			for (const [id, key] of state.keys) {
				if (key.revoked) expect([id, names.has(id)]).toEqual([id, false]);
				else if (!key.revokeInFlight) expect([id, [key.acknowledged, key.inFlight]]).toEqual([id, expect.arrayContaining([names.get(id)])]);
			}
		} finally {
			await second.stop();
		}
		checkNothingHalfWritten(dataDir);
	} finally {
		rmSync(dataDir, { recursive: true, force: true });
	}
});
