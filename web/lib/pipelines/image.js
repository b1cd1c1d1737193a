// The browser side of an image pipeline (the manifest's `pipeline.image`, docs/reference/manifest.md), step for step as
// server/onnxport/pipelines/image.py: decoded upright (EXIF), composited over white, made grey by Pillow's
// formula, resized by Pillow's own fixed-point convolution (its filters, support and rounding, ported here so
// the two agree to the pixel), center-cropped, then scaled and normalized. Only decoding is the browser's.
/** @import { Tensor } from "../tensors/tensors.js" */
import { tensor } from "../tensors/tensors.js";

/**
 * @typedef {object} ImageSpec
 * @property {string} input @property {"RGB"|"BGR"|"L"} mode
 * @property {{width: number, height: number, filter: string}} resize
 * @property {{width: number, height: number}|null} crop
 * @property {boolean} invert @property {number} scale @property {number[]} mean @property {number[]} std
 * @property {"NCHW"|"NHWC"|"flat"} layout @property {"float32"} dtype
 */
/** Pixels, row-major, `channels` values per pixel. @typedef {{width: number, height: number, channels: number, data: Uint8Array}} Pixels */
/** What pipeline() takes as an image. @typedef {Blob|ImageBitmap|HTMLImageElement|HTMLCanvasElement|OffscreenCanvas} ImageInput */

/**
 * An image's RGBA pixels, upright. Colour profiles are not applied, as Pillow applies none.
 * @param {ImageInput} input
 * @returns {Promise<Pixels>}
 */
export async function decodeImage(input) {
  const bitmap =
    input instanceof Blob
      ? await createImageBitmap(input, {
          imageOrientation: "from-image",
          premultiplyAlpha: "none",
          colorSpaceConversion: "none",
        })
      : input;
  const { width, height } = /** @type {{width: number, height: number}} */ (bitmap);
  if (!width || !height) throw new Error("the image has no pixels (not loaded yet, or empty)");
  const canvas = new OffscreenCanvas(width, height);
  const context = /** @type {OffscreenCanvasRenderingContext2D} */ (
    canvas.getContext("2d", { willReadFrequently: true })
  );
  context.drawImage(/** @type {CanvasImageSource} */ (bitmap), 0, 0);
  const data = context.getImageData(0, 0, width, height, { colorSpace: "srgb" }).data;
  return { width, height, channels: 4, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/**
 * The image as a file to send (the server decodes it): a Blob as it is, anything else drawn and encoded as PNG.
 * @param {ImageInput} input
 * @returns {Promise<Blob>}
 */
export async function imageBlob(input) {
  if (input instanceof Blob) return input;
  const { width, height } = /** @type {{width: number, height: number}} */ (input);
  const canvas = new OffscreenCanvas(width, height);
  /** @type {OffscreenCanvasRenderingContext2D} */ (canvas.getContext("2d")).drawImage(
    /** @type {CanvasImageSource} */ (input),
    0,
    0,
  );
  return canvas.convertToBlob({ type: "image/png" });
}

/**
 * The image as the server's raw input takes it: its file (imageBlob), base64.
 * @param {ImageInput} input
 * @returns {Promise<string>}
 */
export async function imageBase64(input) {
  const bytes = new Uint8Array(await (await imageBlob(input)).arrayBuffer());
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

/**
 * The spec's pixels before normalization (what the check compares with Python's).
 * @param {ImageSpec} spec @param {Pixels} rgba
 * @returns {Pixels}
 */
export function pixelsOf(spec, rgba) {
  let pixels = overWhite(rgba);
  if (spec.mode === "L") pixels = grey(pixels);
  if (spec.mode === "BGR") pixels = swapRedBlue(pixels);
  pixels = resize(pixels, spec.resize.width, spec.resize.height, spec.resize.filter);
  if (spec.crop) pixels = centerCrop(pixels, spec.crop.width, spec.crop.height);
  return pixels;
}

/**
 * One image's input tensor, [1, ...] in the spec's layout.
 * @param {ImageSpec} spec @param {Pixels} pixels
 * @returns {Tensor}
 */
export function tensorOf(spec, pixels) {
  const { width, height, channels, data } = pixels;
  const out = new Float32Array(width * height * channels);
  const planar = spec.layout === "NCHW";
  for (let i = 0; i < width * height; i += 1) {
    for (let c = 0; c < channels; c += 1) {
      let unit = Math.fround(data[i * channels + c] / 255);
      if (spec.invert) unit = Math.fround(1 - unit);
      const value = Math.fround(Math.fround(Math.fround(unit * spec.scale) - spec.mean[c]) / spec.std[c]);
      out[planar ? c * width * height + i : i * channels + c] = value;
    }
  }
  const dims = {
    NCHW: [1, channels, height, width],
    NHWC: [1, height, width, channels],
    flat: [1, width * height * channels],
  }[spec.layout];
  return tensor("float32", dims, out);
}

/** @param {Pixels} rgba @returns {Pixels} RGB, each pixel over white: (c * a + 255 * (255 - a) + 127) / 255, floored */
export function overWhite(rgba) {
  const n = rgba.width * rgba.height;
  const out = new Uint8Array(n * 3);
  for (let i = 0; i < n; i += 1) {
    const a = rgba.data[i * 4 + 3];
    for (let c = 0; c < 3; c += 1)
      out[i * 3 + c] = Math.floor((rgba.data[i * 4 + c] * a + 255 * (255 - a) + 127) / 255);
  }
  return { width: rgba.width, height: rgba.height, channels: 3, data: out };
}

/** @param {Pixels} rgb @returns {Pixels} the same pixels in BGR order (OpenCV's) */
function swapRedBlue(rgb) {
  const out = new Uint8Array(rgb.data.length);
  for (let i = 0; i < out.length; i += 3) {
    out[i] = rgb.data[i + 2];
    out[i + 1] = rgb.data[i + 1];
    out[i + 2] = rgb.data[i];
  }
  return { ...rgb, data: out };
}

/** @param {Pixels} rgb @returns {Pixels} Pillow's "L": (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16 */
export function grey(rgb) {
  const n = rgb.width * rgb.height;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 1) {
    out[i] = (rgb.data[i * 3] * 19595 + rgb.data[i * 3 + 1] * 38470 + rgb.data[i * 3 + 2] * 7471 + 0x8000) >>> 16;
  }
  return { width: rgb.width, height: rgb.height, channels: 1, data: out };
}

// Pillow's filters (libImaging/Resample.c): support, and weight at a distance x in source pixels.
const FILTERS = {
  box: { support: 0.5, weight: (/** @type {number} */ x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  bilinear: { support: 1, weight: (/** @type {number} */ x) => Math.max(0, 1 - Math.abs(x)) },
  bicubic: {
    support: 2,
    weight(/** @type {number} */ x) {
      const a = -0.5;
      x = Math.abs(x);
      if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
      return 0;
    },
  },
  lanczos: {
    support: 3,
    weight: (/** @type {number} */ x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0),
  },
};
const PRECISION_BITS = 32 - 8 - 2;

/** @param {number} x */
function sinc(x) {
  if (x === 0) return 1;
  x *= Math.PI;
  return Math.sin(x) / x;
}

/**
 * Resized as Pillow's Image.resize does an 8-bit image: separable passes, horizontal first, each with integer
 * weights of 22 bits and the result clipped to 0..255; nearest takes the source pixel under each centre.
 * @param {Pixels} pixels @param {number} width @param {number} height @param {string} filter
 * @returns {Pixels}
 */
export function resize(pixels, width, height, filter) {
  if (pixels.width === width && pixels.height === height) return pixels;
  if (filter === "nearest") return nearest(pixels, width, height);
  const kind = FILTERS[/** @type {keyof typeof FILTERS} */ (filter)];
  if (!kind) throw new Error(`unknown resize filter ${JSON.stringify(filter)}`);
  let out = pixels;
  if (width !== pixels.width) out = pass(out, width, kind, true);
  if (height !== pixels.height) out = pass(out, height, kind, false);
  return out;
}

/** One direction of the convolution. @param {Pixels} src @param {number} size @param {{support: number, weight: (x: number) => number}} kind @param {boolean} horizontal */
function pass(src, size, kind, horizontal) {
  const inSize = horizontal ? src.width : src.height;
  const { bounds, weights, taps } = coefficients(inSize, size, kind);
  const width = horizontal ? size : src.width;
  const height = horizontal ? src.height : size;
  const { channels } = src;
  const out = new Uint8Array(width * height * channels);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const o = horizontal ? x : y;
      const [first, count] = bounds[o];
      for (let c = 0; c < channels; c += 1) {
        let sum = half;
        for (let k = 0; k < count; k += 1) {
          const at = horizontal ? y * src.width + first + k : (first + k) * src.width + x;
          sum += src.data[at * channels + c] * weights[o * taps + k];
        }
        out[(y * width + x) * channels + c] = Math.min(255, Math.max(0, Math.floor(sum / 2 ** PRECISION_BITS)));
      }
    }
  }
  return { width, height, channels, data: out };
}

/** Pillow's precompute_coeffs and normalize_coeffs_8bpc. @param {number} inSize @param {number} outSize @param {{support: number, weight: (x: number) => number}} kind */
function coefficients(inSize, outSize, kind) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = kind.support * filterScale;
  const taps = Math.ceil(support) * 2 + 1;
  const bounds = [];
  const weights = new Float64Array(outSize * taps);
  for (let o = 0; o < outSize; o += 1) {
    const center = (o + 0.5) * scale;
    const first = Math.max(Math.trunc(center - support + 0.5), 0);
    const count = Math.min(Math.trunc(center + support + 0.5), inSize) - first;
    const raw = [];
    let total = 0;
    for (let k = 0; k < count; k += 1) {
      const w = kind.weight((k + first - center + 0.5) / filterScale);
      raw.push(w);
      total += w;
    }
    raw.forEach((w, k) => {
      const normal = total !== 0 ? w / total : w;
      weights[o * taps + k] =
        normal < 0 ? Math.trunc(-0.5 + normal * 2 ** PRECISION_BITS) : Math.trunc(0.5 + normal * 2 ** PRECISION_BITS);
    });
    bounds.push([first, count]);
  }
  return { bounds, weights, taps };
}

// Pillow's nearest (ImagingScaleAffine): the source coordinate of each output pixel is accumulated in steps
// of the scale from half a step, and truncated; accumulating, not multiplying, is what decides the ties.
/** @param {number} inSize @param {number} outSize */
function nearestIndex(inSize, outSize) {
  const step = inSize / outSize;
  const index = [];
  let at = step * 0.5;
  for (let o = 0; o < outSize; o += 1) {
    index.push(Math.min(inSize - 1, at < 0 ? 0 : Math.trunc(at)));
    at += step;
  }
  return index;
}

/** @param {Pixels} src @param {number} width @param {number} height */
function nearest(src, width, height) {
  const { channels } = src;
  const xs = nearestIndex(src.width, width);
  const ys = nearestIndex(src.height, height);
  const out = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      for (let c = 0; c < channels; c += 1)
        out[(y * width + x) * channels + c] = src.data[(ys[y] * src.width + xs[x]) * channels + c];
    }
  }
  return { width, height, channels, data: out };
}

/** @param {Pixels} src @param {number} width @param {number} height */
export function centerCrop(src, width, height) {
  const top = Math.max(0, Math.floor((src.height - height) / 2));
  const left = Math.max(0, Math.floor((src.width - width) / 2));
  const w = Math.min(width, src.width - left);
  const h = Math.min(height, src.height - top);
  const out = new Uint8Array(w * h * src.channels);
  for (let y = 0; y < h; y += 1) {
    const from = ((top + y) * src.width + left) * src.channels;
    out.set(src.data.subarray(from, from + w * src.channels), y * w * src.channels);
  }
  return { width: w, height: h, channels: src.channels, data: out };
}
