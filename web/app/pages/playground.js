// Playground: run a model in this browser by the library's plan, and on the server, side by side.
import { RUNTIMES, served } from "../../lib/index.js";
import {
  inBrowser,
  judgementRule,
  judgeRun,
  maxAbsDiff,
  renderReason,
  runtime as runtimeRow,
  serverInfer,
} from "../../lib/internal.js";
import { client } from "../client.js";
import { digitsInput } from "../playground/digits.js";
import { describe, genericInput } from "../playground/generic.js";
import { minilmInput } from "../playground/minilm.js";
import { outputsTable } from "../playground/outputs.js";
import { inputSources } from "../playground/sources.js";
import { tabularInput } from "../playground/tabular.js";
import { bytes, el, errorBox, metricText, progressBar, syntheticNote, variantName } from "../ui.js";

// The manifest entry's `playground` (declared by its recipe; imported models are "generic") picks
// the recipe's widget; every model also takes its golden sets, pasted JSON and .npy/.npz files.
// A widget is made from the model's own entry (make(model, {golden, report}); null: it does not fit).
const WIDGETS = new Map([
  ["tabular", [tabularInput, "a row of numbers"]],
  ["image-8x8", [digitsInput, "a drawing"]],
  ["sentence-pair", [minilmInput, "two sentences"]],
]);
const VERIFY_MODES = ["first-use", "always", "off"];
const models = new Map(); // "name|runtime|variant|verify" -> loaded model, kept across visits of the page

export async function playgroundPage(model, pin, params) {
  const verify = VERIFY_MODES.includes(params.get("verify")) ? params.get("verify") : "first-use";
  const progress = el("div", { class: "downloads" });
  const notes = el("div", { class: "notes", "data-testid": "notes" });
  const results = el("div", { class: "results", "data-testid": "results" });
  const choice = el("div", { class: "choice", "data-testid": "choice" });
  const status = el("p", { class: "path", "data-testid": "path", text: "Not run yet." });
  // A widget's own problem (a file that is no image) shows where a run's errors show: once, in the results.
  const report = (error) => results.replaceChildren(errorBox(error.message));
  const golden = await genericInput(model);
  const widgets = [];
  if (WIDGETS.has(model.playground)) {
    const [make, label] = WIDGETS.get(model.playground);
    const widget = await make(model, { golden, report });
    if (widget) widgets.push({ key: "widget", label, ...widget });
  }
  const input = inputSources(model, [...widgets, golden], describe, golden);
  const plan = await client.plan(model.name, { ...pin, verify });
  // The runtime starts now, while the page is read: a first Run then waits for the model alone.
  client.startAhead(model.name, pin).catch(() => {}); // a runtime that cannot start fails in load(), with its reason
  const button = el("button", { type: "button", class: "run", "data-testid": "run", text: "Run" });

  button.addEventListener("click", async () => {
    button.disabled = true;
    results.replaceChildren();
    status.textContent = "Running…";
    try {
      await runOnce(model, { ...pin, verify }, input, { progress, notes, results, status, choice });
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
    syntheticNote(model),
    pinControls(model, pin, verify),
    input.element,
    el("p", {}, button),
    planView(model, plan),
    progress,
    status,
    choice,
    notes,
    results,
  ];
}

async function loaded(model, options, view) {
  const key = [model.name, options.runtime, options.variant, options.verify].join("|");
  const known = models.get(key);
  if (known && !known.disposed) return known;
  view.notes.replaceChildren();
  const hooks = {
    onStep: (step) => {
      view.status.textContent = `Trying ${step.runtime} (${fileText(model, step)})…`;
    },
    onProgress: (received, total, source) => {
      if (!view.bar) {
        view.bar = progressBar(`${model.name} model`);
        view.progress.replaceChildren(view.bar);
      }
      view.bar.update(received, total, source);
    },
    onNote: (note) => view.notes.append(el("p", { class: "note", text: note })),
    onFailure: (step, error) => {
      view.bar = null;
      view.notes.append(errorBox(`${step.runtime} (${fileText(model, step)}) failed: ${error.message}`));
    },
  };
  const fresh = await client.load(model.name, { ...options, ...hooks });
  models.set(key, fresh);
  return fresh;
}

async function runOnce(model, options, input, view) {
  const feeds = await input.feeds();
  const chosen = await loaded(model, options, view);
  const browser = { ...(await chosen.run(feeds)), ...chosen.choice };
  const reference = await serverInfer(client.inference, model.name, chosen.choice.variant, feeds);
  view.status.textContent = pathText(model, chosen.choice);
  view.status.dataset.runtime = chosen.choice.runtime;
  view.status.dataset.variant = chosen.choice.variant;
  view.status.dataset.form = chosen.choice.form ?? "as built";
  view.choice.replaceChildren(choiceView(model, chosen.choice));
  view.results.append(
    resultCard(
      model,
      "browser-result",
      `In this page: ${chosen.choice.runtime}`,
      browser,
      input.describe(browser.outputs),
    ),
    resultCard(
      model,
      "server-result",
      "On the server",
      { ...reference, variant: chosen.choice.variant },
      input.describe(reference.outputs),
    ),
    differenceView(browser, reference),
    verdictView(await judgement(model, chosen.choice, browser.outputs, reference.outputs, feeds)),
  );
}

// The one judgement (judgement.js) of the browser's result, as the import and the check make it: an
// fp32 file element-wise against the server's run of the same file within the runtime's floor;
// an fp16 or int8 file by its task metric against the server's fp32 on these inputs, within the
// variant's budget, the element-wise difference being a diagnostic. Null when both ran on the server.
async function judgement(model, choice, got, sameVariant, feeds) {
  if (!inBrowser(choice.runtime)) return null;
  try {
    const rule = judgementRule(model, choice.variant, choice.key, await client.tolerances());
    const { arithmetic, budget, floor } = rule;
    let fp32 = null;
    if (arithmetic !== "fp32") {
      if (model.variants.fp32?.status !== "ok")
        return { error: `an ${arithmetic} file is judged against fp32, which this model does not serve` };
      fp32 =
        choice.variant === "fp32"
          ? sameVariant
          : (await serverInfer(client.inference, model.name, "fp32", feeds)).outputs;
    }
    const verdict = judgeRun(model, rule, { got, fp32, sameVariant });
    return { ...verdict, arithmetic, budget, floor, runtime: choice.key, fp32: variantName(model, "fp32") };
  } catch (error) {
    return { error: `no verdict: ${error.message}` };
  }
}

const BOUNDS = [
  ["top1_min", "top-1 ≥"],
  ["cosine_min", "cosine ≥"],
  ["scaled_max_abs", "scaled max error ≤"],
  ["scaled_mean_abs", "scaled mean error ≤"],
  ["abs", "abs"],
  ["rel", "rel"],
];

function boundsText(bounds) {
  const parts = BOUNDS.filter(([key]) => bounds?.[key] !== null && bounds?.[key] !== undefined).map(
    ([key, label]) => `${label} ${bounds[key]}`,
  );
  return parts.join(", ") || "none";
}

function verdictView(j) {
  const section = (...children) =>
    el("section", { class: "verdict", "data-testid": "judgement" }, el("h3", { text: "Verdict" }), ...children);
  if (!j)
    return section(
      el("p", { "data-testid": "verdict", "data-ok": "", text: "Both ran on the server: nothing to judge." }),
    );
  if (j.error) return section(el("p", { "data-testid": "verdict", "data-ok": "", class: "error", text: j.error }));
  const rule =
    j.basis === "floor"
      ? `fp32 file: element-wise against the server's output of this file, within the ${j.runtime} floor (${boundsText(j.floor)})`
      : `${j.arithmetic} file: ${metricText(j.metric)} against the server's ${j.fp32} on these inputs, within its budget (${boundsText(j.budget)})`;
  return section(
    el("p", {
      "data-testid": "verdict",
      "data-ok": String(j.ok),
      "data-basis": j.basis,
      text: `Verdict: ${j.ok ? "pass" : `fail: ${renderReason(j.reason)}`}. ${rule}.`,
    }),
    j.diagnostic
      ? el("p", {
          class: "diagnostic",
          "data-testid": "diagnostic",
          text: `Diagnostic, not the verdict: ${renderReason(j.diagnostic)}.`,
        })
      : null,
  );
}

function pathText(model, choice) {
  const threads =
    runtimeRow(choice.runtime)?.threads === "all" ? `, ${choice.threads} thread${choice.threads === 1 ? "" : "s"}` : "";
  const failed = [...new Set(choice.attempts.map((a) => `${a.runtime} ${a.wrong ? "gave wrong results" : "failed"}`))];
  return `Ran on ${choice.runtime} (${fileText(model, choice)}${threads})${failed.length ? ` after ${failed.join(", ")}` : ""}.`;
}

// The variant as people are shown it (its label: "original (int8)"), and its form when the plan chose one
// (docs/reference/manifest.md, "forms").
function fileText(model, { variant, form }) {
  const shown = variantName(model, variant);
  return form ? `${shown}, ${form} form` : shown;
}

function verificationText(v) {
  if (v.status === "passed")
    return `verified on first use against native onnxruntime: max error ${v.max_abs?.toExponential(2)}, ${v.ms.toFixed(0)} ms, ${bytes(v.bytes)}`;
  if (v.status === "remembered") return `verified earlier on this device (${v.at.slice(0, 10)}): not checked again`;
  if (v.status === "reference") return "the server is the reference";
  if (v.status === "off") return "verification off";
  return v.reason ?? v.status;
}

function choiceView(model, choice) {
  return el(
    "section",
    {
      "data-runtime": choice.runtime,
      "data-variant": choice.variant,
      "data-form": choice.form ?? "as built",
      "data-verification": choice.verification.status,
    },
    el("h3", { text: "Why this runtime" }),
    el("p", { "data-testid": "choice-why", text: `${choice.runtime} · ${fileText(model, choice)}: ${choice.why}` }),
    el("p", { "data-testid": "choice-verification", text: verificationText(choice.verification) }),
    choice.attempts.length
      ? el(
          "ul",
          { "data-testid": "choice-attempts" },
          choice.attempts.map((a) =>
            el("li", {
              "data-runtime": a.runtime,
              "data-wrong": String(a.wrong),
              text: `${a.runtime} (${fileText(model, a)}): ${a.error}; using ${choice.runtime}`,
            }),
          ),
        )
      : null,
  );
}

function resultCard(model, testid, title, result, described) {
  const timing = [`run ${result.runMs.toFixed(1)} ms`];
  if (result.createMs !== undefined) timing.push(`session ${result.createMs.toFixed(0)} ms`);
  if (result.source) timing.push(`model from ${result.source}`);
  return el(
    "section",
    { class: "result", "data-testid": testid, "data-value": String(described.value) },
    el("h3", { text: title }),
    el("p", { class: "answer", text: described.label }),
    el("p", { text: `${described.detail} · ${variantName(model, result.variant)}` }),
    el("p", { class: "timing", text: timing.join(" · ") }),
    outputsTable(model, result.outputs, `${testid}-outputs`),
  );
}

function differenceView(browser, server) {
  const rows = Object.entries(browser.outputs).map(([name, tensor]) => {
    const other = server.outputs[name];
    return el("li", {
      text: `${name}: max |browser − server| = ${other ? maxAbsDiff(tensor, other).toExponential(2) : "n/a"}`,
    });
  });
  return el(
    "section",
    { class: "difference", "data-testid": "difference" },
    el("h3", { text: "Difference" }),
    el("ul", {}, rows),
  );
}

// The plan, folded under the Run button: its first step in the summary, every step and every
// runtime left out (and why) inside.
function planView(model, plan) {
  const first = plan.steps[0];
  const summary = first
    ? `Plan: ${plan.steps.length} step${plan.steps.length === 1 ? "" : "s"}, first ${first.runtime} · ${fileText(model, first)}${plan.skipped.length ? `; ${plan.skipped.length} left out` : ""}`
    : "Plan: no runtime can run this model here";
  const details = el(
    "details",
    { class: "plan", "data-testid": "plan-details" },
    el("summary", { "data-testid": "plan-summary", text: summary }),
    el(
      "section",
      { "data-testid": "plan" },
      el(
        "ol",
        {},
        plan.steps.map((s) =>
          el("li", {
            "data-runtime": s.runtime,
            "data-variant": s.variant,
            "data-form": s.form ?? "as built",
            text: `${s.runtime} · ${fileText(model, s)}${s.threads > 1 ? ` · ${s.threads} threads` : ""}: ${s.why}`,
          }),
        ),
      ),
      plan.skipped.length
        ? el(
            "ul",
            { class: "skipped" },
            plan.skipped.map((s) =>
              el("li", {
                "data-runtime": s.runtime,
                "data-variant": s.variant ?? "",
                text: `${s.runtime}${s.variant ? ` · ${variantName(model, s.variant)}` : ""} skipped: ${s.reason}`,
              }),
            ),
          )
        : null,
    ),
  );
  if (first) return details;
  const why = plan.skipped
    .map((s) => `${s.runtime}${s.variant ? ` · ${variantName(model, s.variant)}` : ""}: ${s.reason}`)
    .join("; ");
  return el(
    "div",
    {},
    details,
    el("p", {
      class: "error",
      role: "alert",
      "data-testid": "plan-empty",
      text: `No runtime can run this model here: ${why}`,
    }),
  );
}

function pinControls(model, pin, verify) {
  const select = (label, testid, options, value) =>
    el(
      "select",
      { "aria-label": label, "data-testid": testid },
      options.map(([v, text]) => el("option", { value: v, text, selected: value === v })),
    );
  const runtime = select("runtime", "pin-runtime", [["", "auto"], ...RUNTIMES.map((r) => [r, r])], pin.runtime);
  const variant = select(
    "variant",
    "pin-variant",
    [["", "auto"], ...served(model).map((v) => [v, variantName(model, v)])],
    pin.variant,
  );
  const verification = select(
    "verification",
    "pin-verify",
    VERIFY_MODES.map((m) => [m, m]),
    verify,
  );
  const apply = () => {
    const query = new URLSearchParams();
    if (runtime.value) query.set("runtime", runtime.value);
    if (variant.value) query.set("variant", variant.value);
    if (verification.value !== "first-use") query.set("verify", verification.value);
    location.hash = `#/play/${model.name}${query.size ? `?${query}` : ""}`;
  };
  for (const control of [runtime, variant, verification]) control.addEventListener("change", apply);
  return el(
    "p",
    { class: "pins" },
    el("label", {}, "Runtime ", runtime),
    " ",
    el("label", {}, "Variant ", variant),
    " ",
    el("label", {}, "Verification ", verification),
  );
}
