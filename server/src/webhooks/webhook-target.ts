/**
 * A `webhook_url` checked when the request names it: the address guard URL inputs go through
 * (net/safe-fetch.ts), so a caller cannot point the service's deliveries at its own network. The
 * check is made again at each delivery, since a name may resolve elsewhere by then.
 */
import { checkTarget, type HostResolver } from '../net/safe-fetch';

interface TargetPolicy {
	allowPrivate: boolean;
	/** For the name's resolution. */
	timeoutMs: number;
	resolve?: HostResolver;
}

/** Throws a 400 naming `webhook_url` when its host is refused or cannot be resolved. */
export async function checkWebhookTarget(url: string, policy: TargetPolicy): Promise<void> {
	await checkTarget(new URL(url), 'webhook_url', policy);
}
