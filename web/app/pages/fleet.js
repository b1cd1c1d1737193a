// Fleet page (the operator's): what the devices that load this server's models reported (GET /api/fleet, issue 36):
// per device class, each model, variant and runtime's pass and fail counts and verdict, and the time distributions
// as charts. The figures come from ../fleet-view.js; this module draws them. Chart.js as on the performance page.
import "chart.js";
import {
  byClass,
  checkFleet,
  NO_REPORTS,
  REPORTS_OFF,
  summary,
  TABLE_HEADERS,
  tableRows,
  timeConfig,
  TIMES,
} from "../fleet-view.js";
import { client } from "../client.js";
import { el, errorBox, table, variantName } from "../ui.js";

const { Chart } = globalThis;
// The charts of the page last drawn: Chart.js keeps every instance (and its resize observer) until destroyed.
let drawnCharts = [];

// Read afresh at each visit (reports come in while the operator watches): not the client's once-read documents.
async function readFleet() {
  const url = client.url("api/fleet");
  const response = await fetch(url, { cache: "no-store" });
  if (response.status === 204) return null; // reports off: the server has no fleet
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}${body?.error ? `: ${body.error}` : ""}`);
  return checkFleet(body, url);
}

export async function fleetPage(built) {
  for (const drawn of drawnCharts) drawn.destroy();
  drawnCharts = [];
  const heading = el("h2", { text: "Fleet" });
  const about = el("p", {
    class: "note",
    text:
      "What the devices that loaded this server's models reported: one vote per device (its latest report), " +
      "grouped by device class (browser engine and major version, WebGPU adapter, cores). A verdict or a time counts once k " +
      "distinct devices agree; a page's plan skips a runtime that failed on its class and ranks by the fleet's times.",
  });
  const fleet = await readFleet();
  if (!fleet) return [heading, el("div", { class: "fleet-off", "data-testid": "fleet-off" }, errorBox(REPORTS_OFF))];
  const counts = summary(fleet);
  const line = el("p", {
    "data-testid": "fleet-summary",
    "data-reports": String(counts.reports),
    "data-classes": String(counts.classes),
    text: counts.text,
  });
  if (!fleet.groups.length) {
    return [heading, about, line, el("p", { class: "note", "data-testid": "fleet-empty", text: NO_REPORTS })];
  }
  const name = (model, variant) => variantName(built?.models?.[model], variant);
  const sections = [
    heading,
    about,
    line,
    fleet.generated ? el("p", { class: "note", text: `Published ${fleet.generated}.` }) : null,
  ];
  byClass(fleet).forEach((entry, index) => {
    const rows = tableRows(entry, fleet.k, name).map((row) => ({
      cells: row.cells,
      attributes: { class: `verdict-${row.verdict}`, "data-verdict": row.verdict },
    }));
    sections.push(
      el(
        "section",
        { class: "fleet-class", "data-testid": "fleet-class", "data-class": entry.key },
        el("h3", { text: entry.key }),
        table(TABLE_HEADERS, rows, { class: "fleet" }),
        timeChart(`fleet-chart-${index}`, entry, name),
      ),
    );
  });
  return sections;
}

// The class's time chart in its own box (Chart.js sizes the canvas to its parent) and the choice of which time it
// shows; a note instead when no row has k passing devices that gave the time.
function timeChart(testid, entry, name) {
  const available = TIMES.filter(([which]) => timeConfig(entry, { which, name }));
  if (!available.length) {
    return el("p", {
      class: "note",
      "data-testid": `${testid}-none`,
      text: "No time distribution yet: a time shows once k devices that passed gave it.",
    });
  }
  const config = timeConfig(entry, { which: available[0][0], name });
  const canvas = el("canvas", { role: "img", "aria-label": config.options.plugins.title.text });
  const box = el("div", { class: "chart", "data-testid": testid }, canvas);
  const drawn = new Chart(canvas, config);
  drawnCharts.push(drawn);
  if (available.length === 1) return [box];
  const select = el(
    "select",
    { "data-testid": `${testid}-time` },
    available.map(([which, what], i) => el("option", { value: which, selected: i === 0, text: what })),
  );
  select.addEventListener("change", () => {
    const next = timeConfig(entry, { which: select.value, name });
    drawn.data = next.data;
    drawn.options = next.options;
    canvas.setAttribute("aria-label", next.options.plugins.title.text);
    drawn.update();
  });
  return [box, el("label", { class: "chart-toggle" }, "time shown ", select)];
}
