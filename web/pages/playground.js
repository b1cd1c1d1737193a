// Playground: run a model in this browser by its plan, and on the server, side by side.
import { runStep, runWithPlan } from "../engine.js";
import { served } from "../manifest.js";
import { buildPlan, RUNTIMES } from "../plan.js";
import { speedsFor } from "../speeds.js";
import { digitsInput } from "../playground/digits.js";
import { genericInput } from "../playground/generic.js";
import { irisInput } from "../playground/iris.js";
import { minilmInput } from "../playground/minilm.js";
import { maxAbsDiff } from "../tensors.js";
import { el, errorBox, progressBar } from "../ui.js";

const INPUTS = { digits: digitsInput, iris: irisInput, minilm: minilmInput };

export function playgroundPage(model, probe, pin, bench = null) {
  const input = (INPUTS[model.name] ?? genericInput)(model);
  const plan = buildPlan(model, probe, pin, speedsFor(model, "wasm", bench));
  const progress = el("div", { class: "downloads" });
  const notes = el("div", { class: "notes", "data-testid": "notes" });
  const results = el("div", { class: "results", "data-testid": "results" });
  const status = el("p", { class: "path", "data-testid": "path", text: "Not run yet." });
  const button = el("button", { type: "button", class: "run", "data-testid": "run", text: "Run" });

  button.addEventListener("click", async () => {
    button.disabled = true;
    results.replaceChildren();
    notes.replaceChildren();
    status.textContent = "Running…";
    try {
      await runOnce(model, plan, input, { progress, notes, results, status });
    } catch (error) {
      status.textContent = "Failed.";
      results.append(errorBox(error.message));
    } finally {
      button.disabled = false;
    }
  });

  return [
    el("h2", { text: `Playground: ${model.name}` }),
    el("p", { text: model.description }),
    pinControls(model, pin),
    planView(plan),
    input.element,
    el("p", {}, button),
    progress, status, notes, results,
  ];
}

async function runOnce(model, plan, input, view) {
  const feeds = await input.feeds();
  const bars = new Map();
  const hooks = {
    onStep: (step) => { view.status.textContent = `Trying ${step.runtime} (${step.variant})…`; },
    onProgress: (received, total, source) => {
      if (!bars.has("current")) {
        const bar = progressBar(`${model.name} model`);
        bars.set("current", bar);
        view.progress.replaceChildren(bar);
      }
      bars.get("current").update(received, total, source);
    },
    onNote: (note) => view.notes.append(el("p", { class: "note", text: note })),
    onFailure: (step, error) => {
      bars.delete("current");
      view.notes.append(errorBox(`${step.runtime} (${step.variant}) failed: ${error.message}`));
    },
  };
  const browser = await runWithPlan(model, plan, feeds, hooks);
  const reference = await runStep(model, { runtime: "server", variant: browser.variant }, feeds);
  const ran = input.describe(browser.outputs);
  const said = input.describe(reference.outputs);
  view.status.textContent = pathText(browser);
  view.status.dataset.runtime = browser.runtime;
  view.status.dataset.variant = browser.variant;
  view.results.append(
    resultCard("browser-result", `In this page: ${browser.runtime}`, browser, ran),
    resultCard("server-result", "On the server", reference, said),
    differenceView(browser, reference),
  );
}

function pathText(result) {
  const threads = result.runtime === "wasm" ? `, ${result.threads} thread${result.threads === 1 ? "" : "s"}` : "";
  const tried = result.attempts.length
    ? ` after ${result.attempts.map((a) => `${a.step.runtime} failed`).join(", ")}` : "";
  return `Ran on ${result.runtime} (${result.variant}${threads})${tried}.`;
}

function resultCard(testid, title, result, described) {
  const timing = [`run ${result.runMs.toFixed(1)} ms`];
  if (result.createMs !== undefined) timing.push(`session ${result.createMs.toFixed(0)} ms`);
  if (result.source) timing.push(`model from ${result.source}`);
  return el("section", { class: "result", "data-testid": testid, "data-value": String(described.value) },
    el("h3", { text: title }),
    el("p", { class: "answer", text: described.label }),
    el("p", { text: `${described.detail} · ${result.variant}` }),
    el("p", { class: "timing", text: timing.join(" · ") }));
}

function differenceView(browser, server) {
  const rows = Object.entries(browser.outputs).map(([name, tensor]) => {
    const other = server.outputs[name];
    return el("li", { text: `${name}: max |browser − server| = ${other ? maxAbsDiff(tensor, other).toExponential(2) : "n/a"}` });
  });
  return el("section", { class: "difference", "data-testid": "difference" }, el("h3", { text: "Difference" }), el("ul", {}, rows));
}

function planView(plan) {
  return el("section", { class: "plan", "data-testid": "plan" },
    el("h3", { text: "Plan" }),
    el("ol", {}, plan.steps.map((s) => el("li", { "data-runtime": s.runtime, text: `${s.runtime} · ${s.variant}${s.threads ? ` · ${s.threads} threads` : ""}: ${s.why}` }))),
    plan.skipped.length ? el("ul", { class: "skipped" }, plan.skipped.map((s) => el("li", { "data-runtime": s.runtime, text: `${s.runtime} skipped: ${s.reason}` }))) : null);
}

function pinControls(model, pin) {
  const runtime = el("select", { "aria-label": "runtime", "data-testid": "pin-runtime" },
    el("option", { value: "", text: "auto" }), RUNTIMES.map((r) => el("option", { value: r, text: r, selected: pin.runtime === r })));
  const variant = el("select", { "aria-label": "variant", "data-testid": "pin-variant" },
    el("option", { value: "", text: "auto" }), served(model).map((v) => el("option", { value: v, text: v, selected: pin.variant === v })));
  const apply = () => {
    const query = new URLSearchParams();
    if (runtime.value) query.set("runtime", runtime.value);
    if (variant.value) query.set("variant", variant.value);
    location.hash = `#/play/${model.name}${query.size ? `?${query}` : ""}`;
  };
  runtime.addEventListener("change", apply);
  variant.addEventListener("change", apply);
  return el("p", { class: "pins" }, el("label", {}, "Runtime ", runtime), " ", el("label", {}, "Variant ", variant));
}
