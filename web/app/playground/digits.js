// digits: draw on a canvas; the 8x8 average of the strokes is the model's input (0..1).
import { el } from "../ui.js";
import { tensor } from "../../lib/index.js";
import { argmax, softmax } from "../../lib/internal.js";

const SIZE = 160;
const GRID = 8;

export function digitsInput() {
  const canvas = el("canvas", { width: SIZE, height: SIZE, class: "draw", "data-testid": "digit-canvas" });
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const clear = () => {
    context.fillStyle = "#000";
    context.fillRect(0, 0, SIZE, SIZE);
  };
  clear();
  let drawing = false;
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    return [(event.clientX - box.left) * (SIZE / box.width), (event.clientY - box.top) * (SIZE / box.height)];
  };
  canvas.addEventListener("pointerdown", (event) => {
    drawing = true;
    context.beginPath();
    context.moveTo(...point(event));
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drawing) return;
    context.lineTo(...point(event));
    context.strokeStyle = "#fff";
    context.lineWidth = 16;
    context.lineCap = "round";
    context.lineJoin = "round";
    context.stroke();
  });
  for (const end of ["pointerup", "pointerleave"]) canvas.addEventListener(end, () => { drawing = false; });

  return {
    element: el("div", { class: "input digits" }, canvas,
      el("button", { type: "button", onclick: clear, "data-testid": "clear-canvas", text: "Clear" })),
    feeds() {
      const pixels = context.getImageData(0, 0, SIZE, SIZE).data;
      const cell = SIZE / GRID;
      const data = new Float32Array(GRID * GRID);
      for (let y = 0; y < SIZE; y++) {
        for (let x = 0; x < SIZE; x++) {
          data[Math.floor(y / cell) * GRID + Math.floor(x / cell)] += pixels[(y * SIZE + x) * 4] / 255 / (cell * cell);
        }
      }
      return { pixels: tensor("float32", [1, 1, GRID, GRID], data) };
    },
    describe(outputs) {
      const logits = outputs.logits.data;
      const digit = argmax(logits);
      return { label: `digit ${digit}`, value: digit, detail: `p = ${softmax(logits)[digit].toFixed(3)}` };
    },
  };
}
