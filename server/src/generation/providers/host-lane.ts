/**
 * One call at a time to a host, in the order the callers came, for hosts that draw one image at a
 * time and whose cancel names no job (Stable Diffusion WebUI: its `/sdapi/v1/interrupt` stops
 * whatever is drawing). Kept in this process, per host: while only one of our calls is at the host,
 * an interrupt we send can only stop our own, and a caller that stops waiting in our line leaves it
 * without its request ever being sent, where a request already sent would wait in the host's own
 * queue and draw anyway.
 */
export class HostLane {
	private busy = false;
	private readonly line: Array<() => void> = [];

	/**
	 * Waits for this caller's turn and returns the function that ends it (the next caller's turn
	 * begins). Rejects with the signal's reason, having left the line, if the signal aborts first.
	 */
	async enter(signal: AbortSignal): Promise<() => void> {
		signal.throwIfAborted();
		// The turn is handed from caller to caller: `busy` stays set, so no caller arriving in between goes first.
		if (this.busy) await this.waitTurn(signal);
		else this.busy = true;
		let ended = false;
		return () => {
			if (ended) return;
			ended = true;
			const next = this.line.shift();
			if (next) next();
			else this.busy = false;
		};
	}

	/** Callers waiting for their turn now. */
	get waiting(): number {
		return this.line.length;
	}

	private async waitTurn(signal: AbortSignal): Promise<void> {
		await new Promise<void>((resolve, reject) => {
			const leave = () => {
				this.line.splice(this.line.indexOf(turn), 1);
				reject(signal.reason);
			};
			const turn = () => {
				signal.removeEventListener('abort', leave);
				resolve();
			};
			this.line.push(turn);
			signal.addEventListener('abort', leave, { once: true });
		});
	}
}

const lanes = new Map<string, HostLane>();

/** The lane of one host, shared by every provider of this process that calls it (`key`: its base URL). */
export function laneOf(key: string): HostLane {
	let lane = lanes.get(key);
	if (!lane) lanes.set(key, (lane = new HostLane()));
	return lane;
}
