// What this browser can do: WebGPU (and its adapter), fp16 shaders, threads, SIMD.
// Smallest module using a SIMD instruction (i8x16.splat): it validates only where SIMD exists.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

export async function probe() {
  const result = {
    webgpu: false,
    webgpuReason: null,
    adapter: null,
    shaderF16: false,
    crossOriginIsolated: self.crossOriginIsolated === true,
    hardwareConcurrency: navigator.hardwareConcurrency || 1,
    wasmSimd: WebAssembly.validate(SIMD_PROBE),
    userAgent: navigator.userAgent,
  };
  if (!("gpu" in navigator)) {
    result.webgpuReason = "this browser has no WebGPU (navigator.gpu is missing)";
    return result;
  }
  try {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) {
      result.webgpuReason = "navigator.gpu.requestAdapter() found no adapter";
      return result;
    }
    const info = adapter.info ?? {};
    result.webgpu = true;
    result.shaderF16 = adapter.features.has("shader-f16");
    result.adapter = {
      vendor: info.vendor ?? "", architecture: info.architecture ?? "", device: info.device ?? "",
      description: info.description ?? "",
      // A fallback adapter is a software one (SwiftShader): correct, but slow.
      fallback: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
    };
  } catch (error) {
    result.webgpuReason = `requestAdapter() failed: ${error.message}`;
  }
  return result;
}

export function threadsFor(probeResult) {
  // Threads need cross-origin isolation; beyond 4 the small demo models gain nothing.
  return probeResult.crossOriginIsolated ? Math.min(4, probeResult.hardwareConcurrency) : 1;
}
