"""generation/chat_template.py through TextTokenizer.chat_prompt: messages rendered by the model's template in
Jinja's sandbox; a chat without a template, a malformed message or a template that refuses is a ChatError."""

from __future__ import annotations

import pytest

from fixtures.script_decoder import train_byte_tokenizer, write_tokenizer_folder
from onnxport.errors import ModelFileError
from onnxport.generation.chat_template import ChatError, ChatTemplate
from onnxport.generation.text_tokenizer import TextTokenizer


@pytest.fixture(scope="module")
def trained():
    return train_byte_tokenizer()


def folder_tokenizer(tmp_path, trained, **kwargs) -> TextTokenizer:
    return TextTokenizer.from_folder(write_tokenizer_folder(tmp_path / "model", trained, **kwargs))


def test_the_template_renders_the_messages_and_the_assistants_turn(tmp_path, trained):
    tokenizer = folder_tokenizer(tmp_path, trained)
    prompt = tokenizer.chat_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi é"}])
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi é<|im_end|>\n<|im_start|>assistant\n"
    )
    ids = tokenizer.encode(prompt, add_special_tokens=False)
    assert ids[0] == trained.token_to_id("<|im_start|>")


def test_a_model_without_a_template_is_a_chat_error(tmp_path, trained):
    tokenizer = folder_tokenizer(tmp_path, trained, template=None)
    with pytest.raises(ChatError, match=r"^model has no chat template \(chat_template.jinja\): send a plain prompt"):
        tokenizer.chat_prompt([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ([], "messages: expected a non-empty list of messages, got []"),
        ("hi", "messages: expected a non-empty list of messages, got 'hi'"),
        (["hi"], "messages[0]: expected an object with role and content strings, got 'hi'"),
        ([{"role": "user"}], "messages[0].content: expected a string, got None"),
        ([{"role": "user", "content": "a"}, {"role": 3, "content": "b"}], "messages[1].role: expected a string, got 3"),
        ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content: expected a string, got [{'type'"),
    ],
)
def test_a_malformed_message_is_a_chat_error_naming_it(tmp_path, trained, messages, words):
    tokenizer = folder_tokenizer(tmp_path, trained)
    with pytest.raises(ChatError) as caught:
        tokenizer.chat_prompt(messages)
    assert str(caught.value).startswith(words)
    assert isinstance(caught.value, ValueError)


def test_a_template_that_raises_or_reaches_outside_its_sandbox_is_a_chat_error():
    refusing = ChatTemplate("{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}ok")
    assert refusing.render([{"role": "user", "content": "x"}]) == "ok"
    with pytest.raises(ChatError, match=r"^chat_template.jinja refused the messages: user first$"):
        refusing.render([{"role": "system", "content": "x"}])
    escaping = ChatTemplate("{{ messages.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(ChatError, match="refused the messages"):
        escaping.render([{"role": "user", "content": "x"}])
    with pytest.raises(ChatError, match=r"^t.jinja is not a valid Jinja template: "):
        ChatTemplate("{% for %}", label="t.jinja")


def test_the_template_sees_the_special_tokens_and_keeps_non_ascii_json():
    template = ChatTemplate(
        "{{ bos_token }}{{ messages | tojson }}{{ eos_token }}", special={"bos_token": "<s>", "eos_token": "</s>"}
    )
    assert template.render([{"role": "user", "content": "é"}]) == '<s>[{"role": "user", "content": "é"}]</s>'


def test_generation_json_is_checked_against_the_vocabulary(tmp_path, trained):
    tokenizer = folder_tokenizer(tmp_path, trained, eos=(0, 2))
    assert tokenizer.eos_token_ids == (0, 2) and tokenizer.bos_token_id is None
    with pytest.raises(
        ModelFileError, match=r"generation.json: eos_token_ids: expected a list of token ids below \d+, got \[99999\]"
    ):
        folder_tokenizer(tmp_path, trained, eos=(99999,))
    (tmp_path / "model" / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFileError, match=r"tokenizer.json: the tokenizers library cannot read it: "):
        TextTokenizer.from_folder(tmp_path / "model")
