// Small SVG charts for the performance page: grouped bars and lines, with labelled axes.
const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#1f5fbf", "#e07b00", "#2a9d3c", "#b03a8c", "#6a4fc8", "#777"];

function svg(tag, attributes = {}, text = null) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

function legend(root, series, x, y) {
  series.forEach((name, i) => {
    root.append(svg("rect", { x: x + i * 120, y, width: 10, height: 10, fill: COLORS[i % COLORS.length] }));
    root.append(svg("text", { x: x + i * 120 + 14, y: y + 9, "font-size": 11 }, name));
  });
}

// groups: [{label, values: {series: number|null}}]; log scale when values span decades.
export function groupedBars({ title, unit, groups, series, log = false }) {
  const width = 760, height = 300, left = 60, bottom = 40, top = 40;
  const values = groups.flatMap((g) => series.map((s) => g.values[s])).filter((v) => v > 0);
  const max = Math.max(...values, 1e-9);
  const min = Math.min(...values, max);
  const scale = log
    ? (v) => (Math.log10(v) - Math.log10(min / 2)) / (Math.log10(max) - Math.log10(min / 2))
    : (v) => v / max;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": title });
  root.append(svg("text", { x: left, y: 16, "font-size": 13, "font-weight": 600 }, `${title} (${unit}${log ? ", log scale" : ""})`));
  legend(root, series, left, 24);
  const plot = height - bottom - top;
  const groupWidth = (width - left - 10) / Math.max(groups.length, 1);
  const barWidth = Math.min(22, (groupWidth - 10) / series.length);
  groups.forEach((group, gi) => {
    const x0 = left + gi * groupWidth + 5;
    series.forEach((name, si) => {
      const value = group.values[name];
      if (!(value > 0)) return;
      const h = Math.max(1, scale(value) * plot);
      const x = x0 + si * barWidth;
      const bar = svg("rect", { x, y: top + plot - h, width: barWidth - 2, height: h, fill: COLORS[si % COLORS.length] });
      bar.append(svg("title", {}, `${group.label} · ${name}: ${value.toPrecision(3)} ${unit}`));
      root.append(bar);
    });
    root.append(svg("text", { x: x0, y: height - bottom + 14, "font-size": 11 }, group.label));
  });
  root.append(svg("line", { x1: left, y1: top + plot, x2: width - 5, y2: top + plot, stroke: "#999" }));
  root.append(svg("text", { x: 4, y: top + 10, "font-size": 10 }, max.toPrecision(3)));
  return root;
}

// lines: [{name, points: [[x, y], ...]}]
export function lineChart({ title, xLabel, yLabel, lines }) {
  const width = 760, height = 260, left = 60, bottom = 40, top = 40;
  const xs = lines.flatMap((l) => l.points.map((p) => p[0]));
  const ys = lines.flatMap((l) => l.points.map((p) => p[1]));
  const maxX = Math.max(...xs, 1), maxY = Math.max(...ys, 1e-9);
  const px = (x) => left + (Math.log2(x) / Math.log2(maxX || 2)) * (width - left - 20);
  const py = (y) => top + (1 - y / maxY) * (height - top - bottom);
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart", "aria-label": title });
  root.append(svg("text", { x: left, y: 16, "font-size": 13, "font-weight": 600 }, `${title}`));
  legend(root, lines.map((l) => l.name), left, 24);
  lines.forEach((line, i) => {
    const d = line.points.map(([x, y], j) => `${j ? "L" : "M"}${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ");
    root.append(svg("path", { d, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2 }));
    for (const [x, y] of line.points) {
      const dot = svg("circle", { cx: px(x), cy: py(y), r: 3, fill: COLORS[i % COLORS.length] });
      dot.append(svg("title", {}, `${line.name}: ${x} → ${y.toFixed(1)}`));
      root.append(dot);
    }
  });
  for (const x of [...new Set(xs)]) root.append(svg("text", { x: px(x) - 4, y: height - bottom + 14, "font-size": 11 }, String(x)));
  root.append(svg("text", { x: width / 2, y: height - 6, "font-size": 11 }, xLabel));
  root.append(svg("text", { x: 4, y: top + 10, "font-size": 10 }, `${maxY.toFixed(0)} ${yLabel}`));
  return root;
}
