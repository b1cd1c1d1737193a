"""`onnxport bench --generation FOLDER` (bench/generation_bench.py, generation_table.py) on the tiny decoder: a row of
prefill ms and decode tokens/s per variant, figures and not timed assertions; the greedy tokens it reports are the
generation loop's; another runtime's rows join the same table; the command line's mistakes are usage errors."""

from __future__ import annotations

import json
import re

import pytest

from onnxport.bench import generation_bench, generation_table
from onnxport.generation.decoder_folder import DecoderFolder
from onnxport.generation.loop import Generation
from onnxport.generation.sampling import Sampling

TOKENS = 6
NUMBER = r"\d+\.\d"


def _greedy(folder, tokens: int) -> list[int]:
    opened = DecoderFolder.open(folder, threads=1)
    ids = generation_bench.chat_prompt_ids(opened.tokenizer, generation_bench.DEFAULT_PROMPT)
    with Generation(opened, ids, Sampling(max_new_tokens=tokens)) as generation:
        return [piece.token_id for piece in generation]


def test_the_table_has_prefill_and_tokens_per_second_for_each_variant(run_cli, tiny_decoder, tmp_path):
    report_path = tmp_path / "generation.json"
    args = ("bench", "--generation", tiny_decoder, "--tokens", TOKENS, "--runs", 2, "--json", report_path)
    code, out, err = run_cli(*args)
    assert code == 0, err
    for variant in generation_bench.VARIANTS:
        assert re.search(rf"^onnxport {variant} +\| +{NUMBER} +\(\d\.\d\dx\) +{NUMBER} +\(", out, re.M), out
    assert "prefill ms, 1 thr." in out and "tok/s, 1 thr." in out
    assert f"{TOKENS} greedy tokens, median of 2 rounds" in out
    # onnxport's venv cannot hold onnxruntime-genai (onnxruntime 1.30 against its >=1.31): one line says so.
    assert [line for line in out.splitlines() if line.startswith("ONNX Runtime GenAI: not measured")]
    report = json.loads(report_path.read_text())
    rows = {row["variant"]: row for row in report["rows"]}
    assert list(rows) == list(generation_bench.VARIANTS)
    assert all(row["prefill_ms"] > 0 and row["tokens_per_s"] > 0 and row["threads"] == 1 for row in rows.values())
    # Exactly TOKENS tokens (the bench ignores end-of-sequence), and fp32's are the generation loop's greedy ones.
    assert all(len(row["token_ids"]) == TOKENS for row in rows.values())
    assert rows["fp32"]["token_ids"] == _greedy(tiny_decoder, TOKENS)[:TOKENS]
    assert rows["fp32"]["same_as_fp32"] is True and rows["fp32"]["parted_at"] is None
    for row in rows.values():  # where a variant parts from fp32, fp32's two best logits there are given
        assert (row["parted_at"] is None) == (row["fp32_gap"] is None)


class SameFile:
    """A second runtime that is onnxport again, on the fp32 file: its tokens must equal fp32's."""

    name = "again"
    about = "onnxport once more"

    def __init__(self, folder):
        opened = DecoderFolder.open(folder, threads=1)
        self._ours = generation_bench.Ours({"fp32": folder / "model.onnx"}, opened.tokenizer)
        self.variants = ["fp32"]

    def run(self, variant, threads, prompt_ids, tokens):
        return self._ours.run(variant, threads, prompt_ids, tokens)


def test_a_peers_rows_join_the_table_with_their_agreement(tiny_decoder):
    report = generation_bench.run_generation_bench(
        tiny_decoder,
        variants=("fp32",),
        threads=(1, 2),
        tokens=TOKENS,
        rounds=1,
        peers=[SameFile(tiny_decoder)],
        peer_note="never shown: a peer was measured",
        say=lambda line: None,
    )
    out = generation_table.text(report)
    assert re.search(rf"^again fp32 +\| +{NUMBER} +\(\d\.\d\dx\) +{NUMBER} +\(\d\.\d\dx\) +\| +{NUMBER}", out, re.M)
    assert f"greedy tokens of again fp32 (2 thr.) against onnxport fp32's: equal, all {TOKENS} tokens" in out
    assert "again: onnxport once more" in out
    assert "never shown" not in out
    assert [(r["runtime"], r["threads"]) for r in report["rows"]] == [
        ("onnxport", 1),
        ("again", 1),
        ("onnxport", 2),
        ("again", 2),
    ]


@pytest.mark.parametrize(
    "option, value, words",
    [("--variants", "fp16", "expected some of"), ("--threads", "0", "thread counts"), ("--tokens", "1", "--tokens")],
)
def test_the_command_lines_mistakes_are_usage_errors(
    run_cli, assert_one_line_error, tiny_decoder, option, value, words
):
    code, _, err = run_cli("bench", "--generation", tiny_decoder, option, value)
    assert code == 2
    assert_one_line_error(err, words)


def test_a_missing_folder_is_a_usage_error(run_cli, assert_one_line_error, tmp_path):
    code, _, err = run_cli("bench", "--generation", tmp_path / "nope")
    assert code == 2
    assert_one_line_error(err, "nope", "no such folder")


def _report(rows):
    machine = {"platform": "", "python": "", "cpu": "a CPU", "cores": 2, "onnxruntime": "1.30.0"}
    return {
        "schema": "onnxport.bench.generation",
        "schema_version": 1,
        "machine": machine,
        "folder": "f",
        "prompt": "p",
        "prompt_tokens": 3,
        "tokens": 8,
        "rounds": 1,
        "rows": rows,
        "peers": {},
        "peer_note": "",
    }


def _parted(runtime, parted_at, gap, same):
    return {
        "runtime": runtime,
        "variant": "fp32",
        "threads": 1,
        "prefill_ms": 2.0,
        "tokens_per_s": 10.0,
        "token_ids": list(range(8)),
        "parted_at": parted_at,
        "fp32_gap": gap,
        "same_as_fp32": same,
    }


def test_a_parting_at_a_near_tie_is_told_from_a_divergence():
    out = generation_table.text(
        _report([_parted("onnxport", None, None, True), _parted("tie", 5, 0.04, True), _parted("far", 2, 1.5, False)])
    )
    assert "tie fp32 (1 thr.) against onnxport fp32's: part at token 5 of 8, where fp32's two best logits are " in out
    assert "0.040 apart: a near tie, so equal by the near-tie rule" in out
    assert (
        "far fp32 (1 thr.) against onnxport fp32's: part at token 2 of 8, where fp32's two best logits are 1.500 "
        in out
    )
    assert "1.500 apart: so they diverge" in out
    assert re.search(r"^tie fp32 +\| +2\.0 +\(1\.00x\) +10\.0 +\(1\.00x\)$", out, re.M)
