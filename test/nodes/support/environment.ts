/**
 * What the node suites run against: the real server (URL inputs allowed to reach loopback, where
 * the test media host lives; `serverArgs` adds flags), a recording proxy in front of it, and a host
 * for input media. Registers its own jest hooks; the proxy's record is cleared before each test.
 */
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../../server/support/app';
import { startMediaHost, type MediaHost } from '../../server/support/media-host';
import { startRecordingProxy, type RecordingProxy } from './recording-proxy';

export interface NodeTestEnvironment {
	server: ServiceUnderTest;
	proxy: RecordingProxy;
	media: MediaHost;
}

export function useNodeTestEnvironment(serverArgs: string[] = []): NodeTestEnvironment {
	const environment = {} as NodeTestEnvironment;
	beforeAll(async () => {
		environment.server = await startInProcessServer({ args: ['--allow-private-urls', ...serverArgs] });
		environment.proxy = await startRecordingProxy(environment.server.origin);
		environment.media = await startMediaHost();
	});
	afterAll(async () => {
		await environment.proxy?.close();
		await environment.media?.close();
		await environment.server?.stop({ removeData: true });
	});
	beforeEach(() => environment.proxy.reset());
	return environment;
}
