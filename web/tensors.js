// Plain tensors ({type, dims, data}) shared by the page, the worker and the server client.
export function tensor(type, dims, data) {
  return { type, dims, data };
}

export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

export function row(t, index) {
  const width = t.dims.slice(1).reduce((a, b) => a * b, 1);
  return t.data.slice(index * width, (index + 1) * width);
}

export function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.max(Math.sqrt(na) * Math.sqrt(nb), 1e-12);
}

export function maxAbsDiff(a, b) {
  if (a.data.length !== b.data.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.data.length; i++) {
    const x = Number(a.data[i]), y = Number(b.data[i]);
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    worst = Math.max(worst, Math.abs(x - y));
  }
  return worst;
}

export function softmax(values) {
  const top = Math.max(...values);
  const exps = Array.from(values, (v) => Math.exp(v - top));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}
