// A first load's thread trial (threads.js), after load() returned the model on one thread, so that a first load is
// not slower for it: a session on the page's N threads, verified like the first, then timed against it on the
// reference inputs, each run in the model's turn (LoadedModel.exclusive). The model moves to N threads only when
// they are 10% faster; the loser's session and worker are released and the trial remembered. A trial that
// cannot run keeps the one thread and says why. Never rejects.
import { probe } from "../choice/probe.js";
import { decide, rememberTrial, trialRuns } from "../choice/threads.js";
import { dropIdleWorker } from "../model/workers.js";

/** @import { LoadedModel } from "../model/model.js" */
/** @import { Session } from "../model/session.js" */
/** @import { Choice, PlanStep } from "../types.js" */

/**
 * @param {LoadedModel} loaded the model as load() returned it, on one thread
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
  const many = { ...step, key: step.trial.key, threads: step.trial.threads, trial: null };
  const device = await probe();
  const sha256 = model.variants[step.variant].sha256;
  const settle = (threadsWhy) => ({ why: loaded.choice.why.replace(step.threadsWhy, threadsWhy) });
  const stopped = () => { if (loaded.disposed) throw new Error("the model was disposed"); };
  let other = null;
  try {
    // Its runtime starts now, not beside the load: on 2 cores, a second .wasm compiled at once slowed the load.
    stopped();
    other = await open(many.key, spare);
    const verification = await loaded.exclusive(() => { stopped(); return verify(other, many); });
    const inputs = (await reference())?.inputs;
    if (!inputs) throw new Error("the manifest has no reference inputs to time them on");
    const measured = await trialRuns({ single: loaded.session, many: other, inputs, sha256,
      keys: { single: step.key, many: many.key }, turn: (work) => loaded.exclusive(() => { stopped(); return work(); }) });
    rememberTrial(device, { ...measured, model: model.name, variant: step.variant, sha256 });
    const verdict = decide(measured.oneMs, measured.manyMs, many.threads);
    const threadsWhy = `${verdict.why} (measured after this load)`;
    const faster = verdict.threads > 1 ? other : null;
    await loaded.exclusive(async () => {
      stopped();
      const replaced = faster ? loaded.session : other;
      if (faster) loaded.adopt(faster, { key: many.key, verification, ...settle(threadsWhy) });
      else loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
      other = null; // from here the model owns it, or it is released below
      await replaced.release();
      dropIdleWorker(faster ? step.key : many.key); // the losing thread count's worker and memory, unless in use
    });
    return { threads: verdict.threads, why: threadsWhy };
  } catch (error) {
    await other?.release();
    dropIdleWorker(many.key);
    const threadsWhy = `one thread: ${many.threads} threads were not measured (${error.message})`;
    if (!loaded.disposed) {
      loaded.choice = { ...loaded.choice, ...settle(threadsWhy) };
      onNote?.(`${model.name}: ${threadsWhy}`);
    }
    return { threads: 1, why: threadsWhy };
  }
}
