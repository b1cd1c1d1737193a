"""Generation rows: each served decoder variant, run by the server as a client meets it, against the build.

For every prompt the decoder was judged on, the server generates greedily (temperature 0, the judged number of
new tokens), through the route a client would use: OpenAI's chat completions for a chat model, Triton's
generate otherwise. Its text is held to fp32's golden continuation (generation/golden.py) step by step, under
the near-tie rule. fp32 must not leave it at all; a variant must leave it where the build found it leaving,
prompt by prompt (its manifest's `first_divergences`). So a row fails when serving generates other tokens than
the build judged: a tokenizer, template, sampling or session setting that differs, or a changed file.
"""

from __future__ import annotations

import time
from typing import cast

from onnxport.check import server_http
from onnxport.check.report_types import CheckRow
from onnxport.errors import OnnxportError
from onnxport.generation import golden as golden_file
from onnxport.generation.golden import Golden, GoldenPrompt
from onnxport.json_boundary import JsonObject
from onnxport.repository import decoder_record
from onnxport.repository.decoder_record import ServedDecoder
from onnxport.repository.manifest import Manifest

RUNTIME = "server"
TIMEOUT_S = 300  # one generation of the judged length; the server's own time limit answers first


def decoder_names(manifest: Manifest, names: list[str] | None = None) -> list[str]:
    """The manifest's decoders among `names` (all of them when none are named)."""
    decoders = manifest.get("decoders") or {}
    return sorted(n for n in decoders if not names or n in names)


def rows(base: str, manifest: Manifest, names: list[str]) -> list[CheckRow]:
    """One row per variant of each named decoder: served ones run, the others skipped with why."""
    out: list[CheckRow] = []
    for name in names:
        entry = (manifest.get("decoders") or {})[name]
        try:
            golden_path = entry["assets"][golden_file.GOLDEN_FILE]["file"]
            reference = cast(Golden, server_http.get_json(f"{base}/repository/{golden_path}"))
        except (KeyError, OnnxportError) as exc:
            reason = f"no golden continuations ({golden_file.GOLDEN_FILE}): rebuild it ({exc})"
            out += [_row(name, v, "skipped", reason) for v in entry["variants"]]
            continue
        for variant, record in entry["variants"].items():
            if record["status"] != "ok" or not decoder_record.made(record):
                out.append(_row(name, variant, "skipped", f"not served: {record['reason']}"))
                continue
            out.append(_variant_row(base, name, variant, record, reference))
    return out


def _row(name: str, variant: str, status: str, reason: str | None) -> CheckRow:
    return {
        "browser": None,
        "model": name,
        "variant": variant,
        "runtime": RUNTIME,
        "task": "generation",
        "form": None,
        "basis": "tokens",
        "status": status,
        "reason": reason,
    }


def _variant_row(base: str, name: str, variant: str, record: ServedDecoder, reference: Golden) -> CheckRow:
    row: CheckRow = {**_row(name, variant, "pass", None), "sha256": record["sha256"]}
    # fp32 leaves its own text nowhere; a variant, where the build found it leaving
    measured = record.get("generation")
    expected: list[int | None] | None = [None] * len(reference["prompts"])
    if variant != "fp32":
        expected = measured.get("first_divergences") if measured else None
    if expected is None or len(expected) != len(reference["prompts"]):
        return {**row, "status": "skipped", "reason": "built before each prompt's divergence was kept: rebuild it"}
    started = time.perf_counter()
    try:
        texts = [_generate(base, name, variant, p["prompt"], reference) for p in reference["prompts"]]
    except OnnxportError as exc:
        return {**row, "status": "error", "reason": str(exc).splitlines()[0]}
    found = [golden_file.divergence(p, text) for p, text in zip(reference["prompts"], texts)]
    equal = sum(position is None for position in found)
    row["metric"] = {"greedy_equal": equal, "prompts": len(found), "first_divergences": found}
    row["row_ms"] = round((time.perf_counter() - started) * 1000, 1)
    differing = [i for i, (got, want) in enumerate(zip(found, expected)) if got != want]
    if differing:
        i = differing[0]
        row["status"] = "fail"
        row["reason"] = (
            f"{len(differing)} of {len(found)} prompts differ from the build's judgement; first, prompt {i + 1} "
            f"({_short(reference['prompts'][i]['prompt'])}): "
            + _difference(reference["prompts"][i], texts[i], found[i], expected[i])
        )
    return row


def _difference(reference: GoldenPrompt, text: str, got: int | None, want: int | None) -> str:
    judged = "equal to fp32's" if want is None else f"leaving fp32's at step {want}"
    if got is None:
        return f"the build judged it {judged}, the server generated fp32's text"
    before = reference["texts"][got - 1] if got else ""
    said = text[len(before) :][: max(len(golden_file.step_token(reference, got)), 1) + 8]
    return (
        f"the build judged it {judged}, the server left at step {got}: {said!r} where fp32 has "
        f"{golden_file.step_token(reference, got)!r}"
    )


def _short(prompt: str, width: int = 40) -> str:
    return repr(prompt if len(prompt) <= width else prompt[: width - 3] + "...")


def _generate(base: str, name: str, variant: str, prompt: str, reference: Golden) -> str:
    """The server's greedy text for one prompt, by the route a client of this model would use."""
    knobs = {"temperature": 0, "max_tokens": reference["new_tokens"]}
    if reference["chat"]:
        body: JsonObject = {
            "model": f"{name}:{variant}",
            "messages": [{"role": "user", "content": prompt}],
            **knobs,
        }
        answer = server_http.post_json(f"{base}/v1/chat/completions", body, TIMEOUT_S)
        return str(answer["choices"][0]["message"]["content"])
    url = f"{base}/v2/models/{name}/versions/{variant}/generate"
    answer = server_http.post_json(url, {"text_input": prompt, **knobs}, TIMEOUT_S)
    return str(answer["text_output"])
