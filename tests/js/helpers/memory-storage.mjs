// localStorage is a browser API; node tests keep the library's memory in a Map (imported before
// the library, so its modules find it). Clear `storage` between tests.
export const storage = new Map();
globalThis.localStorage = {
  getItem: (k) => (storage.has(k) ? storage.get(k) : null),
  setItem: (k, v) => storage.set(k, String(v)),
  removeItem: (k) => storage.delete(k),
};
