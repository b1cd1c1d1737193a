// What this browser remembers between visits (localStorage): measured speeds and verdicts.
// Storage that is full or disabled costs the memory, never the run.
export function readJson(key) {
  try {
    return JSON.parse(localStorage.getItem(key) ?? "{}") ?? {};
  } catch {
    return {};
  }
}

export function updateJson(key, change) {
  const value = readJson(key);
  change(value);
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // full or disabled: the figures are used for this page only
  }
}

export function forget(key) {
  try {
    localStorage.removeItem(key);
  } catch {
    // nothing to forget
  }
}
