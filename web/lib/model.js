// A loaded model: run(feeds) on the runtime the plan chose, what was chosen and why, dispose().
import { serverInfer } from "./server-api.js";
import { recordRun } from "./speeds.js";

export class LoadedModel {
  // session: an onnxruntime-web Session, or null on the server; choice: see Client.load.
  constructor({ name, base, record, session, choice, onDispose }) {
    this.name = name;
    this.base = base;
    this.record = record;
    this.session = session;
    this.choice = choice;
    this.onDispose = onDispose;
    this.disposed = false;
  }

  // feeds: {inputName: {type, dims, data}} -> {outputs: {name: {type, dims, data}}, runMs}
  async run(feeds) {
    if (this.disposed) throw new Error(`${this.name} was disposed; load it again`);
    if (!this.session) return serverInfer(this.base, this.name, this.choice.variant, feeds);
    const first = this.session.runs === 0;
    const result = await this.session.run(feeds);
    recordRun(this.record.sha256, this.choice.key, result.runMs, first);
    return result;
  }

  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.onDispose?.();
    await this.session?.release();
  }
}
