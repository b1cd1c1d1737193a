"""The plan ranks by what the page will pay (web/lib/choice/cost.js), in a real Chromium against a real
`onnxport serve` of the demo repository: a fresh page's plan for minilm is the order of download + expected runs
x warm run that this test works out from the manifest (nothing measured yet: each variant's native time at build
time x the prior of the runtime key the page runs), by default (1000 runs) and with `expectedRuns: 1`; the
choice's why says what it was chosen over and which term decided; a bad value is refused before anything is
downloaded. Nothing is loaded here: the plan is read off the playground and `client.plan`.
"""

from __future__ import annotations

from playwright.sync_api import expect

from fixtures.playground import by_testid, plan_steps, wait_for_probe

PLANS = """async () => {
  const { connect } = await import('/web/lib/index.js');
  const { runtime } = await import('/web/lib/choice/runtimes.js');
  const client = connect();
  const order = async (options) => (await client.plan('minilm', options)).steps
    .filter((s) => s.runtime === 'wasm' && !s.why.startsWith('as built, if'))
    .map((s) => ({ variant: s.variant, key: s.key, prior: runtime(s.key).prior, why: s.why }));
  let refused = null;
  try { await client.load('minilm', { expectedRuns: 0 }); } catch (error) { refused = String(error.message); }
  return { byDefault: await order({}), coldStart: await order({ expectedRuns: 1 }), refused };
}"""

UNMEASURED_BYTES_PER_MS = 1250  # 10 Mbit/s, as the plan weighs a download it has not measured


def _cheapest(variants: dict, prior: dict, runs: int) -> list[str]:
    """The served variants by what a page pays on WebAssembly with nothing measured, cheapest first."""

    def pays(record):
        warm = record["speed"]["native_ms"] * prior["factor"] + prior["overheadMs"]
        return record["bytes"] / UNMEASURED_BYTES_PER_MS + runs * warm

    served = {name: r for name, r in variants.items() if r["status"] == "ok"}
    return sorted(served, key=lambda name: pays(served[name]))


def test_a_fresh_page_plans_minilm_by_what_it_will_pay_and_says_which_term_decided(open_tab, demo_manifest):
    tab = open_tab("#/play/minilm")
    page = tab.page
    wait_for_probe(page)
    plan_steps(page)
    plans = page.evaluate(PLANS)
    variants = demo_manifest["models"]["minilm"]["variants"]
    for name, runs in (("byDefault", 1000), ("coldStart", 1)):
        steps = plans[name]
        assert len({s["key"] for s in steps}) == 1, steps  # one thread count for every file before any trial
        expected = _cheapest(variants, steps[0]["prior"], runs)
        assert [s["variant"] for s in steps] == expected, (name, steps)
        chosen, runner_up = steps[0], steps[1]
        assert f"x {runs} expected run" in chosen["why"], chosen
        assert f"; over {runner_up['variant']}: its " in chosen["why"], chosen
        print(f"\n[plan] minilm, {runs} expected runs: {chosen['why']}")
    smallest = min(variants, key=lambda v: variants[v]["bytes"])
    assert plans["coldStart"][0]["variant"] == smallest, "a cold start on an unmeasured link takes the smallest file"

    first = by_testid(page, "plan").locator("ol > li").first  # the playground shows the default plan
    assert first.get_attribute("data-variant") == plans["byDefault"][0]["variant"]
    expect(first).to_contain_text("x 1000 expected runs")
    expect(first).to_contain_text(f"; over {plans['byDefault'][1]['variant']}: its ")
    assert plans["refused"] == (
        "expectedRuns must be a whole number of 1 or more (the runs the page expects of "
        "the model; 1 when a cold start matters most), got 0"
    ), plans
    assert not any("/artifacts/" in url for url in tab.requests), "nothing was downloaded"
