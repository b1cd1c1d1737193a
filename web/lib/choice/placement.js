// Where onnxruntime-web really ran each node: read from its verbose session log
// ("Node(s) placed on [CPUExecutionProvider]. Number of nodes: N" then "  Op (name)" lines).
const HEADER = /(All nodes|Node\(s\)) placed on \[(\w+)\]\. Number of nodes: (\d+)/;
const NODE = /VerifyEachNodeIsAssignedToAnEp\]\s{2,}(\S+) \(/;
const COPIES = new Set(["MemcpyToHost", "MemcpyFromHost"]);

export function placement(logs) {
  const nodes = {};
  const fallbackOps = {};
  let provider = null;
  let wholeSessionsOnCpu = 0; // "All nodes placed on [CPU...]" lists no node lines after it
  for (const line of logs) {
    const header = HEADER.exec(line);
    if (header) {
      provider = header[2];
      nodes[provider] = (nodes[provider] ?? 0) + Number(header[3]);
      if (header[1] === "All nodes" && provider === "CPUExecutionProvider") wholeSessionsOnCpu += Number(header[3]);
      continue;
    }
    const node = NODE.exec(line);
    if (node && provider === "CPUExecutionProvider" && !COPIES.has(node[1])) {
      fallbackOps[node[1]] = (fallbackOps[node[1]] ?? 0) + 1;
    }
  }
  return {
    found: Object.keys(nodes).length > 0,
    webgpu_nodes: nodes.WebGpuExecutionProvider ?? nodes.JsExecutionProvider ?? 0,
    // Graph nodes on the CPU backend, without the copies onnxruntime adds between devices.
    cpu_nodes: Object.values(fallbackOps).reduce((a, b) => a + b, 0) + wholeSessionsOnCpu,
    cpu_op_types: fallbackOps,
    by_provider: nodes,
  };
}
