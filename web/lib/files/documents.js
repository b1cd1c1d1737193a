// The server's small JSON documents (its manifest, tolerance table, bench and conformance records, a model's
// golden sets), each read once per client: a failed read is forgotten, so the next call tries again.
import { decodeTensors } from "../tensors/tensors.js";
import { fetchFailed } from "./cors.js";

/** @import { Tensors } from "../tensors/tensors.js" */

export class Documents {
  /** @param {(path: string) => string} url a path under the server's URL, made absolute */
  constructor(url) {
    this.url = url;
    this.cache = new Map(); // url -> promise of JSON
  }

  /**
   * A document's JSON. Not required: null when the server has none (204, 404).
   * @param {string} path @param {{required?: boolean}} [options]
   * @returns {Promise<any>}
   */
  json(path, { required = false } = {}) {
    const url = this.url(path);
    if (!this.cache.has(url)) {
      const promise = fetch(url).then(
        async (response) => {
          if (!required && (response.status === 204 || response.status === 404)) return null;
          const body = await response.json().catch(() => null);
          if (!response.ok)
            throw new Error(`GET ${url}: HTTP ${response.status}${body?.error ? `: ${body.error}` : ""}`);
          return body;
        },
        (error) => {
          throw fetchFailed(url, error);
        },
      );
      promise.catch(() => this.cache.delete(url));
      this.cache.set(url, promise);
    }
    return this.cache.get(url);
  }

  /** A model's golden sets, decoded. @param {string} name @returns {Promise<Array<{inputs: Tensors, outputs: Tensors}>>} */
  async golden(name) {
    const body = await this.json(`api/models/${encodeURIComponent(name)}/golden`, { required: true });
    return body.sets.map((set) => ({ inputs: decodeTensors(set.inputs), outputs: decodeTensors(set.outputs) }));
  }
}
