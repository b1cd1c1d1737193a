// onnxruntime-web (ort.wasm.min.mjs, 1 thread) in a Worker: sessions, timed runs, profiles.
// The profiler's trace is printed to the console by the WebAssembly module: console.* is captured.
const logs = [];
for (const level of ["log", "info", "warn", "error"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    logs.push(args.map(String).join(" "));
    if (logs.length > 200000) logs.shift();
    if (level === "error") original(...args);
  };
}

let ort = null;
const sessions = new Map();
let nextSession = 1;

function tensor({ type, dims, data }) {
  const typed = {
    int64: () => BigInt64Array.from(data, (v) => BigInt(v)),
    int32: () => Int32Array.from(data),
    float32: () => Float32Array.from(data),
    bool: () => Uint8Array.from(data, (v) => (v ? 1 : 0)),
  }[type]();
  return new ort.Tensor(type, typed, dims);
}

function tensors(feeds) {
  return Object.fromEntries(Object.entries(feeds).map(([name, spec]) => [name, tensor(spec)]));
}

const operations = {
  async init({ ortBase, threads = 1 }) {
    ort = await import(new URL("ort.wasm.min.mjs", ortBase).href);
    ort.env.wasm.wasmPaths = ortBase;
    ort.env.wasm.numThreads = threads;
    ort.env.logLevel = "error";
    return { version: ort.env.versions?.web ?? null, threads: ort.env.wasm.numThreads, isolated: self.crossOriginIsolated };
  },
  async create({ url, feeds, profile = false, optimization = "all" }) {
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: ["wasm"], graphOptimizationLevel: optimization,
      logSeverityLevel: 3, enableProfiling: profile,
    });
    const id = nextSession++;
    sessions.set(id, { session, feeds });
    return id;
  },
  // Timed runs, interleaved across sessions (A B C A B C ...) so drift hits all alike.
  // Each time is performance.now() around session.run(), fresh ort.Tensors built before the clock starts.
  async time({ sessionIds: ids, warmup = 5, runs = 30 }) {
    const times = Object.fromEntries(ids.map((id) => [id, []]));
    for (let r = 0; r < warmup + runs; r++) {
      for (const id of ids) {
        const { session, feeds } = sessions.get(id);
        const inputs = tensors(feeds);
        const t0 = performance.now();
        await session.run(inputs);
        const ms = performance.now() - t0;
        if (r >= warmup) times[id].push(ms);
      }
    }
    return times;
  },
  // Profiled runs: returns the console lines printed by the runs and by endProfiling, and each run's wall time.
  async profile({ session: sid, runs = 5 }) {
    const { session, feeds } = sessions.get(sid);
    logs.length = 0;
    const wall = [];
    for (let r = 0; r < runs; r++) {
      const inputs = tensors(feeds);
      const t0 = performance.now();
      await session.run(inputs);
      wall.push(performance.now() - t0);
    }
    const duringRuns = logs.length;
    await session.endProfiling();
    return { wall, duringRuns, lines: logs.splice(0, logs.length) };
  },
  async release({ session: sid }) {
    await sessions.get(sid)?.session.release();
    sessions.delete(sid);
  },
};

self.onmessage = async ({ data }) => {
  const { id, op, ...args } = data;
  try {
    self.postMessage({ id, ok: true, result: await operations[op](args) });
  } catch (error) {
    self.postMessage({ id, ok: false, error: error?.message ?? String(error) });
  }
};
