// The bench page's two sides, each text in and embedding out (tokenizer, run, mean pooling, L2 norm):
//   peer      Transformers.js 4.3.2 (transformers.web.js), on the page's main thread as it runs by default;
//   onnxport  onnxport's browser library from the onnxport server (?server=URL), in its worker.
// Nothing is imported before a side is first used, so a cold start here is measured from nothing.
// A side's `threads`: a number pins it (the peer's env.wasm.numThreads; onnxport's session on wasm-1t or wasm), null
// leaves it to the library (the peer: onnxruntime-web's default; onnxport: load() and its thread trial). A dtype of
// "default" is the library's own (the peer: none given, its wasm default; onnxport: load() with no options).
// scripts/bench/peer_bench.py calls window.peerBench's functions through Playwright.
const SERVER = new URL(location.href).searchParams.get("server");
const PEER_MODEL = "all-MiniLM-L6-v2"; // the folder under /peer/models/ (scripts/bench/peer/model_folder.py)
const OX_MODEL = "minilm";

let transformers = null;
let onnxport = null;
let client = null;

// Transformers.js, set up once per page: local files only, onnxruntime-web's files from this server (the asyncify
// build Transformers.js picks by default, from the CDN, for a browser with WebGPU), the thread count given (null:
// left unset, as a user leaves it). onnxruntime-web reads it once, when its wasm starts: one count per page.
async function peerLibrary(threads) {
  if (!transformers) {
    transformers = await import("/peer/transformers/transformers.web.js");
    const { env } = transformers;
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    // A path, as Transformers.js's default "/models/": with an absolute http URL here, 4.3.2's file check
    // (_get_file_metadata) skips local files, finds no tokenizer_config.json and loads no tokenizer at all.
    env.localModelPath = "/peer/models/";
    const ort = new URL("/peer/ort/", location.href).href;
    env.backends.onnx.wasm.wasmPaths = {
      mjs: `${ort}ort-wasm-simd-threaded.asyncify.mjs`,
      wasm: `${ort}ort-wasm-simd-threaded.asyncify.wasm`,
    };
    if (threads !== null) env.backends.onnx.wasm.numThreads = threads;
  }
  return transformers;
}

async function peerOpen(dtype, threads) {
  const library = await peerLibrary(threads);
  const options = dtype === "default" ? { device: "wasm" } : { dtype, device: "wasm" };
  const extractor = await library.pipeline("feature-extraction", PEER_MODEL, options);
  const onnx = library.env.backends.onnx;
  return {
    // The numbers the runtime really took (numThreads is set by onnxruntime-web when its wasm starts, if unset).
    info: {
      version: onnx.versions?.web ?? null,
      threads: onnx.wasm.numThreads,
      wasm: onnx.wasm.wasmPaths?.wasm ?? null,
      dtype: extractor.model?.config?.["transformers.js_config"]?.dtype ?? dtype,
    },
    threads: () => onnx.wasm.numThreads,
    embed: async (texts) => (await extractor(texts, { pooling: "mean", normalize: true })).data,
    dispose: () => extractor.dispose(),
  };
}

async function onnxportLibrary() {
  if (!onnxport) {
    onnxport = await import(new URL("web/lib/dist/onnxport.js", SERVER).href);
    client = onnxport.connect(SERVER);
  }
  return client;
}

// A variant on an explicit thread count: load() has no thread pin (its first load runs one thread, then a trial),
// so this opens the session as load() does (client.session: download, sha256, runtime start, create) on the
// runtime key of that count (wasm-1t: one; wasm: the page's ceiling, min(4, hardwareConcurrency)), and runs
// the model's pipeline on it as LoadedModel.pipeline does. No first-use verification: the bench checks accuracy.
async function onnxportOpen(variant, threads) {
  const connected = await onnxportLibrary();
  const entry = await connected.model(OX_MODEL);
  const record = entry.variants[variant];
  if (!record)
    throw new Error(`onnxport: minilm has no variant ${variant}; variants: ${Object.keys(entry.variants).join(", ")}`);
  const key = threads === 1 ? "wasm-1t" : "wasm";
  const [{ session }, pipeline] = await Promise.all([connected.session(record, key), connected.pipeline(OX_MODEL)]);
  if (session.info.threads !== threads) {
    await session.release();
    throw new Error(
      `onnxport: asked for ${threads} threads, the runtime started ${session.info.threads} (crossOriginIsolated ${self.crossOriginIsolated}, hardwareConcurrency ${navigator.hardwareConcurrency})`,
    );
  }
  return {
    info: { version: session.info.version, threads: session.info.threads, key, bytes: record.bytes },
    embed: async (texts) =>
      (await pipeline.answer(texts, (feeds) => session.run(feeds))).outputs.sentence_embedding.data,
    dispose: () => session.release(),
  };
}

// onnxport as a page calls it: load() (its plan's variant for "default", else that variant on WebAssembly), its own
// thread choice and first-use verification; settle() waits for its thread trial, whose runs are part of the warm-up.
async function onnxportLoad(variant) {
  const connected = await onnxportLibrary();
  const model = await connected.load(OX_MODEL, variant === "default" ? {} : { runtime: "wasm", variant });
  const entry = await connected.model(OX_MODEL);
  return {
    info: {
      version: model.session?.info?.version ?? null,
      threads: model.choice.threads,
      key: model.choice.key,
      variant: model.choice.variant,
      runtime: model.choice.runtime,
      bytes: entry.variants[model.choice.variant]?.bytes ?? null,
      why: model.choice.why,
    },
    threads: () => model.choice.threads,
    settle: async () => {
      const trial = await model.threadTrial;
      return { threads: model.choice.threads, trial: trial ?? null, why: model.choice.why };
    },
    embed: async (texts) => (await model.pipeline(texts)).outputs.sentence_embedding.data,
    dispose: () => model.dispose(),
  };
}

const open = {
  peer: peerOpen,
  onnxport: (variant, threads) => (threads === null ? onnxportLoad(variant) : onnxportOpen(variant, threads)),
};
const sessions = new Map(); // "side/dtype" -> opened

async function timed(work) {
  const started = performance.now();
  const value = await work();
  return [performance.now() - started, value];
}

window.peerBench = {
  isolated: () => ({
    crossOriginIsolated: self.crossOriginIsolated,
    hardwareConcurrency: navigator.hardwareConcurrency,
    userAgent: navigator.userAgent,
  }),

  // From nothing (this page as loaded, no library imported, an empty cache) to the first embedding of `text`.
  async cold({ side, dtype, threads, text }) {
    const started = performance.now();
    const opened = await open[side](dtype, threads);
    const readyMs = performance.now() - started;
    const embedding = await opened.embed([text]);
    const ms = performance.now() - started;
    // Not timed: where the library's own thread choice ended (onnxport's trial), for the per-round threads.
    const settled = opened.settle ? await opened.settle() : { threads: opened.threads?.() ?? opened.info.threads };
    return { ms, readyMs, info: opened.info, settled, embedding: Array.from(embedding) };
  },

  // onnxport as a page calls it: load() (plan pinned to WebAssembly and the variant, first-use verification, its
  // own thread choice), then model.pipeline(text).
  async coldLoad({ variant, text }) {
    const started = performance.now();
    const connected = await onnxportLibrary();
    const model = await connected.load(OX_MODEL, { runtime: "wasm", variant });
    const readyMs = performance.now() - started;
    const { outputs } = await model.pipeline(text);
    const ms = performance.now() - started;
    const { threads, verification } = model.choice;
    return {
      ms,
      readyMs,
      info: { threads, verification: verification?.status ?? null },
      embedding: Array.from(outputs.sentence_embedding.data),
    };
  },

  // Opens every side's sessions for the warm rounds and runs each `warmup` times at each batch size.
  // (onnxport's load(): its thread trial done first.)
  async openAll({ sides, warmup, texts }) {
    const infos = {};
    for (const { name, side, dtype, threads } of sides) {
      const opened = await open[side](dtype, threads);
      const settled = opened.settle ? await opened.settle() : null;
      for (let i = 0; i < warmup; i++) {
        await opened.embed(texts.slice(0, 1));
        await opened.embed(texts.slice(0, 8));
      }
      sessions.set(name, opened);
      infos[name] = { ...opened.info, ...(settled ? { settled } : {}) };
    }
    return infos;
  },

  // One round: each side in `order` runs `runs[batch]` calls at each batch size, texts taken in turn from
  // `start`. Every side takes the same texts in a round (a longer text is a slower call).
  async round({ order, runs, texts, start = 0 }) {
    const times = {};
    const threads = {}; // the count each side ran this round on (a session's, or its runtime's numThreads)
    let next = 0;
    const take = (n) => Array.from({ length: n }, () => texts[next++ % texts.length]);
    for (const name of order) {
      next = start;
      const opened = sessions.get(name);
      times[name] = {};
      threads[name] = opened.threads?.() ?? opened.info.threads;
      for (const [batch, count] of Object.entries(runs)) {
        const list = (times[name][batch] = []);
        for (let i = 0; i < count; i++) {
          const batchTexts = take(Number(batch));
          list.push((await timed(() => opened.embed(batchTexts)))[0]);
        }
      }
    }
    return { times, threads };
  },

  // Every text's embedding, in batches of `batch` (as the reference is made), for the accuracy table.
  async embedAll({ name, texts, batch }) {
    const opened = sessions.get(name);
    const rows = [];
    for (let i = 0; i < texts.length; i += batch) {
      const part = texts.slice(i, i + batch);
      const data = await opened.embed(part);
      const width = data.length / part.length;
      for (let r = 0; r < part.length; r++) rows.push(Array.from(data.subarray(r * width, (r + 1) * width)));
    }
    return rows;
  },
};
