// The app shell: probe the device once, read the manifest, route by the URL's hash.
import { clearCache, probe } from "../lib/index.js";
import { threadCeiling } from "../lib/internal.js";
import { client, clientProblem } from "./client.js";
import { conformancePage } from "./pages/conformance.js";
import { fleetPage } from "./pages/fleet.js";
import { modelPage } from "./pages/model.js";
import { modelsPage } from "./pages/models.js";
import { playgroundPage } from "./pages/playground.js";
import { performancePage } from "./pages/performance.js";
import { el, errorBox, show } from "./ui.js";

const main = document.getElementById("main");
const device = document.getElementById("device");
const probed = probe();

function route() {
  if (location.pathname === "/conformance") {
    return { page: "conformance", name: null, params: new URLSearchParams(location.search) };
  }
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  return { page: parts[0] ?? "models", name: parts[1], params: new URLSearchParams(query) };
}

async function render() {
  main.replaceChildren(el("p", { text: "Loading…" }));
  try {
    if (clientProblem) throw clientProblem;
    const [built, capabilities, bench] = await Promise.all([client.manifest(), probed, client.bench()]);
    const { page, name, params } = route();
    const model = () => namedModel(built, page, name);
    const pin = { runtime: params.get("runtime") || "", variant: params.get("variant") || "" };
    const content =
      page === "conformance"
        ? conformancePage(built, params)
        : page === "model"
          ? modelPage(model())
          : page === "play"
            ? await playgroundPage(model(), pin, params)
            : page === "performance"
              ? performancePage(built, capabilities, bench)
              : page === "fleet"
                ? await fleetPage(built)
                : page === "models"
                  ? modelsPage(built)
                  : unknownPage(location.hash);
    show(main, content);
  } catch (error) {
    main.replaceChildren(errorBox(error.message));
  }
}

// The model a #/model/<name> or #/play/<name> route names; one it does not name, or that is not in the manifest,
// is an error listing the models there are.
function namedModel(built, page, name) {
  const known = Object.keys(built.models).join(", ") || "none yet";
  if (!name) throw new Error(`#/${page} needs a model: #/${page}/<model>; models: ${known}`);
  const model = built.models[name];
  if (!model) throw new Error(`no model ${JSON.stringify(name)} in the manifest; models: ${known}`);
  return model;
}

// A route no page answers (#/about): said, with the way back, rather than the models page shown without a word.
function unknownPage(hash) {
  return [
    el("h2", { text: "No such page" }),
    el("p", {
      role: "alert",
      "data-testid": "unknown-route",
      text: `This app has no page ${hash}. Its pages: #/ (models), #/model/<model>, #/play/<model>, #/performance, #/fleet and /conformance.`,
    }),
    el("p", {}, el("a", { class: "button", href: "#/", "data-testid": "models-link", text: "Go to the models page" })),
  ];
}

function showDevice(p) {
  const webgpu = p.webgpu
    ? `WebGPU: ${[p.adapter.vendor, p.adapter.architecture, p.adapter.description].filter(Boolean).join(" ") || "adapter"}${p.adapter.fallback ? " (software fallback adapter)" : ""}, shader-f16 ${p.shaderF16 ? "yes" : "no"}`
    : `WebGPU: no (${p.webgpuReason})`;
  // What the page really has, by the plan's own rule: isolation without SharedArrayBuffer (WebKit) is no threads.
  const ceiling = threadCeiling(p);
  const threads =
    ceiling.threads > 1
      ? `threads: yes, ${ceiling.why}${ceiling.overstated ? `; ${ceiling.overstated}` : ""}`
      : `threads: no (${ceiling.why.replace(/^one thread: /, "")})`;
  device.replaceChildren(
    el("span", { "data-testid": "probe-webgpu", "data-available": String(p.webgpu), text: webgpu }),
    el("span", {
      "data-testid": "probe-webnn",
      "data-available": String(p.webnn),
      text: p.webnn ? "WebNN: yes" : `WebNN: no (${p.webnnReason})`,
    }),
    el("span", { "data-testid": "probe-threads", "data-available": String(ceiling.threads > 1), text: threads }),
    el("span", {
      "data-testid": "probe-simd",
      "data-available": String(p.wasmSimd),
      text: `WebAssembly SIMD: ${p.wasmSimd ? "yes" : "no"}`,
    }),
    el("button", {
      type: "button",
      "data-testid": "clear-cache",
      text: "Clear model cache",
      onclick: async (event) => {
        await clearCache();
        await client.reset();
        event.target.textContent = "Cache cleared";
      },
    }),
  );
  device.dataset.ready = "true";
}

probed.then(showDevice, (error) => device.replaceChildren(errorBox(`device probe failed: ${error.message}`)));
window.addEventListener("hashchange", render);
window.addEventListener("unhandledrejection", (event) =>
  main.append(errorBox(`unexpected error: ${event.reason?.message ?? event.reason}`)),
);
render();
