// digits: draw a digit, dark ink on light paper as a photo of one is, or choose an image file; the library's
// pipeline (the model's own spec: grey, an 8x8 box average, inverted) makes the model's input of either.
import { client } from "../client.js";
import { el } from "../ui.js";
import { argmax, softmax } from "../../lib/internal.js";
import { decodedImage } from "./image-file.js";
import { UserDataError } from "./user-data.js";

const SIZE = 160;
export const EMPTY_CANVAS = "The canvas is empty: draw a digit on it (or choose an image file), then Run.";

// report(error): shows a problem with the chosen file where a run's errors show, so it is said once.
export function digitsInput(model, { report = () => {} } = {}) {
  const canvas = el("canvas", { width: SIZE, height: SIZE, class: "draw", "data-testid": "digit-canvas" });
  const context = canvas.getContext("2d", { willReadFrequently: true });
  let chosen = null; // an image file, fed as it is (the canvas shows it)
  let unreadable = null; // the chosen file's problem: a run says it again rather than running a blank canvas
  let inked = false; // a stroke was drawn since the canvas was last cleared: a blank canvas is no digit to read
  const file = el("input", {
    type: "file",
    accept: "image/*",
    "aria-label": "an image of a digit",
    "data-testid": "digit-file",
  });
  const clear = () => {
    context.fillStyle = "#fff";
    context.fillRect(0, 0, SIZE, SIZE);
    chosen = null;
    unreadable = null;
    inked = false;
    file.value = "";
  };
  file.addEventListener("change", async () => {
    const picked = file.files?.[0];
    if (!picked) return;
    context.fillStyle = "#fff";
    context.fillRect(0, 0, SIZE, SIZE);
    chosen = picked;
    unreadable = null;
    inked = false;
    file.value = ""; // the same file chosen again is a new change
    try {
      context.drawImage(await decodedImage(picked), 0, 0, SIZE, SIZE);
      inked = true; // drawn over, the image stays on the canvas: what runs then
    } catch (error) {
      unreadable = error;
      report(error);
    }
  });
  clear();
  let drawing = false;
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    return [(event.clientX - box.left) * (SIZE / box.width), (event.clientY - box.top) * (SIZE / box.height)];
  };
  canvas.addEventListener("pointerdown", (event) => {
    drawing = true;
    chosen = null; // drawing over a chosen image: the drawing is what runs
    unreadable = null;
    context.beginPath();
    context.moveTo(...point(event));
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drawing) return;
    inked = true;
    context.lineTo(...point(event));
    context.strokeStyle = "#000";
    context.lineWidth = 16;
    context.lineCap = "round";
    context.lineJoin = "round";
    context.stroke();
  });
  for (const end of ["pointerup", "pointerleave"])
    canvas.addEventListener(end, () => {
      drawing = false;
    });

  return {
    element: el(
      "div",
      { class: "input digits" },
      canvas,
      el("button", { type: "button", onclick: clear, "data-testid": "clear-canvas", text: "Clear" }),
      el("label", {}, "or an image file ", file),
    ),
    async feeds() {
      if (unreadable) throw unreadable;
      // The model answers any input, a blank one too ("digit 4", confidently): nothing drawn is asked for instead.
      if (!chosen && !inked) throw new UserDataError(EMPTY_CANVAS);
      const pipeline = await client.pipeline(model.name);
      return pipeline.encode([chosen ?? canvas]);
    },
    describe(outputs) {
      const logits = outputs.logits.data;
      const digit = argmax(logits);
      return { label: `digit ${digit}`, value: digit, detail: `p = ${softmax(logits)[digit].toFixed(3)}` };
    },
  };
}
