// Verdicts on (artifact, runtime) pairs, which the plan weighs: this browser's own, from first-use
// verification, remembered per onnxruntime-web version and device; and those `onnxport check` recorded in
// the repository (conformance.json, server/onnxport/check/verdict_file.py) for a kind of device.
import { forget, readJson, updateJson } from "../remembered/store.js";
import { deviceKind, fingerprint } from "./probe.js";

const VERDICTS = "onnxport-verdicts-v1";
const FAILED_IN_CHECK = new Set(["fail", "unsupported"]);

function key(sha256, runtime, ortVersion, device) {
  return [sha256, runtime, ortVersion, fingerprint(device)].join("|");
}

export function remembered(sha256, runtime, ortVersion, device) {
  return readJson(VERDICTS)[key(sha256, runtime, ortVersion, device)] ?? null;
}

export function remember(sha256, runtime, ortVersion, device, verdict) {
  updateJson(VERDICTS, (all) => {
    all[key(sha256, runtime, ortVersion, device)] = { ...verdict, at: new Date().toISOString() };
  });
}

export function forgetVerdicts() {
  forget(VERDICTS);
}

// The repository's verdicts (conformance.json) on this (artifact, runtime) pair from devices of this kind.
export function checkedVerdicts(conformance, sha256, runtime, device) {
  const kind = deviceKind(device);
  return (conformance?.verdicts ?? []).filter(
    (v) => v.sha256 === sha256 && v.runtime === runtime && v.device_kind === kind,
  );
}

// The repository's verdict against this pair on a device of this kind, if `onnxport check` failed it.
export function checkedFailure(conformance, sha256, runtime, device) {
  return checkedVerdicts(conformance, sha256, runtime, device).find((v) => FAILED_IN_CHECK.has(v.status)) ?? null;
}
