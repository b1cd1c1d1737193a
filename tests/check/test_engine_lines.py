"""check_report.engine_lines: per engine, what ran (of what its page planned) by runtime and status, its WebGPU
adapter and scope, its threads as the page has them."""

from __future__ import annotations

from onnxport.check.check_report import engine_lines

SWIFTSHADER = {
    "engine": "chromium",
    "version": "156.0",
    "webgpu": True,
    "cross_origin_isolated": True,
    "adapter": {"architecture": "swiftshader", "fallback": True},
    "threads": {"most": 2, "why": "up to 2 threads (the browser reports 2 cores)"},
}


def rows(engine: str, *pairs: tuple[str, str]) -> list[dict]:
    return [{"browser": engine, "model": "m", "variant": "fp32", "runtime": r, "status": s} for r, s in pairs]


def test_an_interrupted_engine_says_what_ran_of_its_plan_by_runtime():
    report = {
        "browsers": {"chromium": SWIFTSHADER},
        "plans": {"chromium": {"rows": 40, "webgpu": {"scope": "one per model", "left_out": 12}}},
        "results": [
            {"browser": None, "runtime": "source", "status": "pass"},
            *rows("chromium", ("wasm", "pass"), ("wasm", "pass"), ("webgpu", "pass"), ("wasm", "fail")),
        ],
    }
    assert engine_lines(report) == [
        "chromium 156.0: 4 of 40 page rows ran: wasm 1 fail, 2 pass; webgpu 1 pass (WebGPU: a software adapter, "
        "swiftshader, one row per model (12 left out: --full-webgpu runs them); threads: up to 2 threads (the browser "
        "reports 2 cores))"
    ]


def test_a_finished_engine_without_shared_memory_and_an_engine_that_did_not_start():
    webkit = {
        "engine": "webkit",
        "version": "2.50",
        "webgpu": False,
        "cross_origin_isolated": True,
        "threads": {
            "most": 1,
            "why": "one thread: this browser gives the page no SharedArrayBuffer, which threads need",
        },
    }
    report = {
        "browsers": {"webkit": webkit, "firefox": {"engine": "firefox"}},
        "plans": {"webkit": {"rows": 2, "webgpu": {"scope": "full"}}},
        "results": [
            *rows("webkit", ("wasm", "pass"), ("webgpu", "skipped"), ("answers", "pass")),
            *rows("firefox", ("-", "error")),
        ],
    }
    assert engine_lines(report) == [
        "webkit 2.50: wasm 1 pass; webgpu 1 skipped; answers 1 pass (WebGPU: none; threads: one thread: this browser "
        "gives the page no SharedArrayBuffer, which threads need)",
        "firefox ?: start 1 error (WebGPU: none; threads: no)",
    ]
