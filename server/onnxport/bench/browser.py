"""The browser part of the bench: web/app/bench.js in headless Chromium, driven by Playwright."""

from __future__ import annotations

import numpy as np

from onnxport import tensor_json
from onnxport.harness import chromium as chromium_driver


def browser_bench(base_url: str, executable: str | None, models: list[str], runtimes: list[str],
                  inputs: dict[str, dict[str, np.ndarray]], runs: int) -> dict:
    encoded = {name: tensor_json.encode(feeds) for name, feeds in inputs.items()}
    with chromium_driver.chromium(executable, webgpu="webgpu" in runtimes) as browser:
        page = browser.new_page()
        page.goto(f"{base_url}/")
        result = page.evaluate(
            """async ([models, runtimes, encodedInputs, runs]) => {
                const { runBench } = await import('/web/app/bench.js');
                return runBench({ models, runtimes, encodedInputs, runs });
            }""",
            [models, runtimes, encoded, runs],
        )
        # One thread on both sides, so kernel times compare like for like.
        result["profiles"] = {
            model: page.evaluate(
                """async ([model, encodedInputs]) => {
                    const { profileOperators } = await import('/web/app/bench.js');
                    return profileOperators({ model, variant: 'fp32', runtime: 'wasm-1t', encodedInputs });
                }""",
                [model, encoded[model]],
            )
            for model in models if "wasm-1t" in runtimes
        }
        page.close()
    return result
