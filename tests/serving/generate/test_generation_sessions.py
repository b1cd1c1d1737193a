"""The generation models' sessions run as the V2 models' do: the server's intra_op_threads, inter_op_threads,
intra_op_spinning (auto: by the engine) and providers, read back from onnxruntime's own session options of the
decoder the server built and of a V2 model's session from the same server's pool."""

from __future__ import annotations

import pytest

from onnxport.serving import config, state

SPINNING = "session.intra_op.allow_spinning"

pytestmark = pytest.mark.usefixtures("clean_environment")


def spins(session) -> bool:
    try:
        return session.get_session_options().get_session_config_entry(SPINNING) != "0"
    except RuntimeError:  # not set: onnxruntime's default, which spins
        return True


def how_it_runs(session) -> tuple[int, int, bool, list[str]]:
    options = session.get_session_options()
    return options.intra_op_num_threads, options.inter_op_num_threads, spins(session), session.get_providers()


@pytest.mark.parametrize(
    ("threads", "inter_op", "spinning", "engine", "expected_spin"),
    [(1, 1, "off", "waitress", False), (2, 2, "auto", "ray", False), (1, 2, "auto", "waitress", True)],
)
def test_the_decoder_session_runs_as_the_v2_sessions(
    tiny_decoder, tmp_path, threads, inter_op, spinning, engine, expected_spin
):
    settings = config.load(
        {
            "repository": str(tmp_path),
            "generation_models": {"tiny": str(tiny_decoder)},
            "intra_op_threads": threads,
            "inter_op_threads": inter_op,
            "intra_op_spinning": spinning,
        },
        environ={},
    )
    built = state.build(settings, engine=engine)
    assert built.generation is not None
    decoder = built.generation.models.find("tiny", None)[1].decoder.session
    v2 = built.sessions.get("0" * 64, tiny_decoder / "model.onnx", "a V2 session of the same file")
    assert how_it_runs(decoder) == (threads, inter_op, expected_spin, ["CPUExecutionProvider"])
    assert how_it_runs(decoder) == how_it_runs(v2)
