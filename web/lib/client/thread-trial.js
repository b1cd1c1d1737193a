// A first load's thread trial (threads.js), after load() returned the model on the prior's thread count, so that
// a first load is not slower for it: a session on the other count (one thread, or the page's N), verified like
// the first, then timed against it on the reference inputs, each run in the model's turn (LoadedModel.exclusive),
// until paired-runs.js's rule stops. The model moves to the other count only when that is clearly faster (N
// threads: at least 10% faster); the loser's session and worker are released and the trial remembered. A trial
// that cannot run keeps the count the model has and says why. Never rejects.
import { probe } from "../choice/probe.js";
import { trialOutcome } from "../choice/paired-runs.js";
import { rememberTrial, trialRuns } from "../choice/threads.js";
import { dropIdleWorker } from "../model/workers.js";

/** @import { LoadedModel } from "../model/model.js" */
/** @import { Session } from "../model/session.js" */
/** @import { Choice, PlanStep } from "../types.js" */

/**
 * @param {LoadedModel} loaded the model as load() returned it, on the prior's thread count
 * @param {object} args
 * @param {import("../files/manifest.js").ModelEntry} args.model
 * @param {PlanStep} args.step the step it was loaded by (its `trial`: the key and threads to measure)
 * @param {ArrayBuffer} args.spare a copy of the file's bytes, for the second session
 * @param {(key: string, bytes: ArrayBuffer) => Promise<Session>} args.open a session of the file on a runtime key
 * @param {(session: Session, step: PlanStep) => Promise<Choice["verification"]>} args.verify the load's verification of a session
 * @param {() => Promise<{inputs: import("../tensors/tensors.js").Tensors}|null>} args.reference the file's reference
 * @param {(text: string) => void} [args.onNote]
 * @returns {Promise<{threads: number, why: string}>}
 */
export async function threadTrial(loaded, { model, step, spare, open, verify, reference, onNote }) {
  const other = { ...step, key: step.trial.key, threads: step.trial.threads, trial: null };
  const device = await probe();
  const sha256 = model.variants[step.variant].sha256;
  const settle = (threadsWhy) => ({ why: loaded.choice.why.replace(step.threadsWhy, threadsWhy) });
  const stopped = () => {
    if (loaded.disposed) throw new Error("the model was disposed");
  };
  const [single, many] = other.threads === 1 ? [other, step] : [step, other];
  let session = null;
  try {
    // Its runtime starts now, not beside the load: on 2 cores, a second .wasm compiled at once slowed the load.
    stopped();
    session = await open(other.key, spare);
    const verification = await loaded.exclusive(() => {
      stopped();
      return verify(session, other);
    });
    const inputs = (await reference())?.inputs;
    if (!inputs) throw new Error("the manifest has no reference inputs to time them on");
    const sessions =
      other.threads === 1 ? { single: session, many: loaded.session } : { single: loaded.session, many: session };
    const measured = await trialRuns({
      ...sessions,
      inputs,
      sha256,
      keys: { single: single.key, many: many.key },
      turn: (work) =>
        loaded.exclusive(() => {
          stopped();
          return work();
        }),
    });
    const outcome = trialOutcome(measured, many.threads, step.threads);
    rememberTrial(device, {
      ...measured,
      threads: outcome.threads,
      decided: outcome.decided,
      model: model.name,
      variant: step.variant,
      sha256,
    });
    const threadsWhy = `${outcome.why}, measured after this load`;
    const moves = outcome.threads === other.threads;
    await loaded.exclusive(async () => {
      stopped();
      const released = moves ? loaded.session : session;
      if (moves) loaded.adopt(session, { key: other.key, verification, ...settle(threadsWhy) });
      else loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
      session = null; // from here the model owns it, or it is released below
      await released.release();
      dropIdleWorker(moves ? step.key : other.key); // the losing thread count's worker and memory, unless in use
    });
    return { threads: outcome.threads, why: threadsWhy };
  } catch (error) {
    await session?.release();
    dropIdleWorker(other.key);
    const kept = step.threads === 1 ? "one thread" : `${step.threads} threads`;
    const untried = other.threads === 1 ? "one thread was" : `${other.threads} threads were`;
    const threadsWhy = `${kept}: ${untried} not measured against ${step.threads === 1 ? "it" : "them"} (${error.message})`;
    if (!loaded.disposed) {
      loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
      onNote?.(`${model.name}: ${threadsWhy}`);
    }
    return { threads: step.threads, why: threadsWhy };
  }
}
