"""Input files are regular files read within a size limit, through one function.

Devices, FIFOs and sockets (also behind a symbolic link) are refused before they are
opened, with a message naming the file, through every command that reads a file:
``tokens count``, catalogs, scenarios, forecasts, language samples, measurement CSVs,
AIPerf and vLLM exports, sweep files. A file that holds more than the limit (whatever
its size on disk says) is read up to the limit + 1 byte and refused. ``tokens count``
reads and counts a text a piece at a time: its counts equal the whole text's, and its
memory does not grow with the file.

The command-line tests run ``python -m dcplan`` in a subprocess under a 3 GiB address
space limit (so that a regression that reads ``/dev/zero`` fails with an error, not by
filling the machine's memory) and a 60 s timeout (a FIFO opened for reading blocks
until a writer comes). The 2 s bound is asserted on the refusal itself, in process;
the whole command takes 1-7 s on a busy 2-core machine, most of it imports.
"""

from __future__ import annotations

import functools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcplan import tokens, yamlio
from dcplan.catalog import load_catalog
from dcplan.errors import InputError

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "docs" / "samples"
LINUX = sys.platform.startswith("linux")
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                                reason="needs FIFOs and /dev/zero (POSIX)")

#: Address space a dcplan subprocess may use here [bytes]: a plan of the minimal
#: example runs in 2 GiB.
CHILD_ADDRESS_SPACE = 3 << 30
#: Time after which a dcplan subprocess counts as hung [s].
HANG_S = 60
NOT_REGULAR = "is not a regular file"
AIPERF_OPTIONS = ["--hardware", "h200_sxm", "--model", "llama3_70b", "--precision", "fp8",
                  "--gpus", "8", "--tp", "8"]


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def dcplan(*args: str, cwd: Path, env: dict | None = None) -> tuple[int, str, float]:
    """Run ``python -m dcplan ARGS``: exit code, stdout + stderr, wall time [s]."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "dcplan", *args], cwd=cwd,
                              capture_output=True, text=True, timeout=HANG_S,
                              stdin=subprocess.DEVNULL, preexec_fn=_limit_child,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        pytest.fail(f"dcplan {' '.join(args)} did not finish in {HANG_S} s (blocked on a "
                    "FIFO or reading a device?)")
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - t0


def _refused(out: str, *names: str) -> None:
    """Assert a clean input error that names each of ``names`` as not a regular file."""
    assert "Traceback" not in out, out
    assert "internal error" not in out, out
    for name in names:
        lines = [ln for ln in out.splitlines() if name in ln and NOT_REGULAR in ln]
        assert lines, f"no 'not a regular file' message naming {name}:\n{out}"
        assert "save the data to a file" in lines[0]


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, and a symbolic link to /dev/zero, in ``tmp_path``."""
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    link = tmp_path / "zero.txt"
    link.symlink_to("/dev/zero")
    return {"fifo": fifo, "link": link}


# --------------------------------------------------------------------------- the one reader


def _finishes(fn, seconds: float = 2.0):
    """Run ``fn`` in a thread: (its exception or result, wall [s]); fail if it blocks."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["value"] = exc

    t0 = time.perf_counter()
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), f"still reading after {seconds} s"
    return box["value"], time.perf_counter() - t0


@pytest.mark.parametrize("which", ["fifo", "link", "/dev/zero", "/dev/null"])
@pytest.mark.parametrize("reader", ["read_text", "read_yaml", "measure_file"])
def test_special_files_are_refused_within_2_s(specials, which, reader):
    path = specials.get(which, Path(which))
    fn = {"read_text": lambda: yamlio.read_text(path),
          "read_yaml": lambda: yamlio.read_yaml(path),
          "measure_file": lambda: tokens.measure_file({}, path)}[reader]
    err, wall = _finishes(fn)
    assert isinstance(err, InputError), err
    (p,) = err.problems
    assert p.file == str(path) and p.message.startswith(NOT_REGULAR), p
    kind = {"fifo": "a FIFO", "link": "a link to /dev/zero, a character device"}.get(
        which, "a character device")
    assert kind in p.message
    assert wall < 2.0


def test_folder_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="is a folder; give a file"):
        yamlio.read_text(tmp_path)
    with pytest.raises(InputError, match="file not found"):
        yamlio.read_text(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="file not found"):
        yamlio.read_text(tmp_path / "nope" / "deeper.yaml")


def _rchar() -> int:
    """Bytes this process has read through read() system calls so far."""
    with open("/proc/self/io") as f:
        return int(next(ln for ln in f if ln.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_a_file_that_lies_about_its_size_is_read_to_the_limit_and_no_further(monkeypatch):
    """/proc files say 0 bytes on disk; with a 10 KiB limit, /proc/self/smaps (the
    memory map of this process, far above 10 KiB) is refused after limit + 1 bytes."""
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "0.01")
    cap = yamlio.max_input_bytes()
    assert cap == 10485 and os.stat("/proc/self/smaps").st_size == 0
    before = _rchar()
    with pytest.raises(InputError) as info:
        yamlio.read_bytes("/proc/self/smaps")
    read = _rchar() - before
    assert cap + 1 <= read <= cap + 1 + 1024  # the rest: reading /proc/self/io itself
    (p,) = info.value.problems
    assert p.file == "/proc/self/smaps"
    assert "holds more than the 0.01 MB limit" in p.message and yamlio.MAX_INPUT_ENV in p.message


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_a_file_that_grew_after_its_size_was_checked_stops_at_the_limit(tmp_path, monkeypatch):
    """The size on disk is checked first; a file that grows past the limit after that
    check (simulated: the check passes) is still read only to limit + 1 bytes."""
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x: 1\n" * ((3 << 20) // 5))  # 3 MB
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "1")
    cap = yamlio.max_input_bytes()
    monkeypatch.setattr(yamlio, "check_regular", lambda path, limit=None: os.stat(path))
    got, before = 0, _rchar()
    with pytest.raises(InputError, match="holds more than the 1 MB limit"):
        for piece in yamlio.read_chunks(big, chunk_bytes=64 << 10):
            got += len(piece)
    read = _rchar() - before
    assert got == cap  # every byte up to the limit was handed on, none after it
    assert cap + 1 <= read <= cap + 1 + 1024


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_a_file_above_the_limit_on_disk_is_refused_unread(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x: 1\n" * ((2 << 20) // 5))  # 2 MB
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "1")
    before = _rchar()
    with pytest.raises(InputError) as info:
        yamlio.read_yaml(big)
    assert _rchar() - before < 1024
    (p,) = info.value.problems
    assert "file is 2.0 MB, above the 1 MB limit for input files" in p.message
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "3")
    assert yamlio.read_text(big) == big.read_text()  # a raised limit reads it


@pytest.mark.slow
def test_a_yaml_file_read_again_is_a_fresh_parse_of_its_current_bytes(tmp_path, monkeypatch):
    """read_yaml keeps parses by name and content: the caller's copy is its own, a file
    rewritten in place (same size, maybe the same time stamp) reads anew, the same text
    under another name names that file, and the limits and checks apply every time."""
    f = tmp_path / "a.yaml"
    f.write_text("a: 1\nb: [1, 2]\n")
    first = yamlio.read_yaml(f)
    first["b"].append(3)
    first["a"] = 9
    again = yamlio.read_yaml(f)
    assert (again["a"], again["b"]) == (1, [1, 2])
    f.write_text("a: 2\nb: [1, 2]\n")
    assert yamlio.read_yaml(f)["a"] == 2
    g = tmp_path / "g.yaml"
    g.write_text(f.read_text())
    assert yamlio.read_yaml(g)[yamlio.AT_KEY][0].endswith("g.yaml")
    assert yamlio.read_yaml(f)[yamlio.AT_KEY][0].endswith("a.yaml")
    f.write_text("a: 1\na: 2\n")
    with pytest.raises(InputError, match="key 'a' appears twice"):
        yamlio.read_yaml(f)
    f.write_text("a: 2\nb: [1, 2]\n")
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "0.000001")
    with pytest.raises(InputError, match="above the"):
        yamlio.read_yaml(f)
    monkeypatch.delenv(yamlio.MAX_INPUT_ENV)
    # the kept parses stay within their bound, least recently used dropped first
    monkeypatch.setattr(yamlio, "PARSED_CACHE_BYTES", 2000)
    for i in range(30):
        (tmp_path / f"n{i}.yaml").write_text(f"n: {i}\nlist: {list(range(20))}\n")
        assert yamlio.read_yaml(tmp_path / f"n{i}.yaml")["n"] == i
    assert 0 < sum(len(v) for v in yamlio._parsed.values()) <= 2000
    assert any(name.endswith("n29.yaml") for name, _ in yamlio._parsed)
    assert not any(name.endswith("n0.yaml") for name, _ in yamlio._parsed)
    # many threads reading and evicting at once (a Dask worker's threads): every read
    # is its own file's parse, no error
    from concurrent.futures import ThreadPoolExecutor
    names = [tmp_path / f"n{i}.yaml" for i in range(30)] * 20
    with ThreadPoolExecutor(8) as ex:
        got = list(ex.map(yamlio.read_yaml, names))
    assert [d["n"] for d in got] == [i for _ in range(20) for i in range(30)]


@pytest.mark.slow
def test_yaml_is_read_by_libyaml_with_the_same_lines_and_refusals(tmp_path):
    """The loader scans with libyaml (C) under PyYAML's composer: the same documents and
    lines as PyYAML's own loader on every shipped file, and a control character, a
    broken flow list and nesting past the limit are each one problem with its line."""
    import yaml

    assert yaml.__with_libyaml__ and issubclass(yamlio._LineLoader, yaml.cyaml.CParser)

    class Pure(yamlio._LineChecks, yaml.SafeLoader):
        pass

    Pure.add_constructor("tag:yaml.org,2002:float", Pure.construct_yaml_float)
    Pure.yaml_implicit_resolvers = yamlio._LineLoader.yaml_implicit_resolvers
    shipped = sorted([*(REPO / "catalogs").rglob("*.yaml"), *(REPO / "examples").glob("*.yaml")])
    assert len(shipped) > 30
    for path in shipped:
        text = path.read_text(encoding="utf-8")
        loader = Pure(text)
        loader.duplicate_keys, loader.bad_numbers, loader.shown, loader.depth = [], [], "x", 0
        try:
            pure = loader.get_single_data()
        finally:
            loader.dispose()
        assert yamlio._parse_yaml(text, "x") == pure, path
    cases = {"a: 1\nb: 'é é é'\nc: x\x07y\n": (3, "control characters are not allowed"),
             "a: [1, 2\n": (2, "did not find expected ',' or ']'"),
             "a: 1\n" + "b:\n" + "".join(" " * (i + 1) + f"k{i}:\n"
                                        for i in range(yamlio.MAX_YAML_DEPTH + 1)):
             (None, f"nesting deeper than {yamlio.MAX_YAML_DEPTH} levels")}
    for text, (line, words) in cases.items():
        with pytest.raises(InputError) as err:
            yamlio._parse_yaml(text, "f.yaml")
        (problem,) = err.value.problems
        assert words in problem.message and problem.file == "f.yaml", problem
        assert line is None or problem.line == line, problem


def test_text_limit_is_separate_and_named(tmp_path, monkeypatch):
    """Texts to count are not held to the 10 MB input limit but to their own."""
    text = tmp_path / "t.txt"
    text.write_bytes(b"word and more\n" * ((2 << 20) // 14))  # 2 MB
    monkeypatch.setenv(yamlio.MAX_INPUT_ENV, "1")
    tokens.check_text_file(text)  # the input limit does not apply
    monkeypatch.setenv(yamlio.MAX_TEXT_ENV, "1")
    with pytest.raises(InputError) as info:
        tokens.check_text_file(text)
    (p,) = info.value.problems
    assert "above the 1 MB limit for text files to count" in p.message
    assert yamlio.MAX_TEXT_ENV in p.message


# --------------------------------------------------------------------------- through the CLI


@pytest.mark.slow
def test_cli_tokens_count_refuses_specials_all_at_once(tmp_path, specials):
    (tmp_path / "ok.txt").write_text("Some text to count.\n")
    (tmp_path / "folder").mkdir()
    rc, out, wall = dcplan("tokens", "count", "-m", "llama33_70b", "ok.txt", "fifo.txt",
                           "zero.txt", "/dev/zero", "folder", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "fifo.txt", "zero.txt", "/dev/zero")
    assert "4 problems found" in out
    assert "folder: is a folder; give text files (e.g. docs/samples/*.txt)" in out
    print(f"tokens count: {wall:.1f} s")


def _catalog_with(tmp_path: Path, name: str, target: str | None = None) -> Path:
    """A copy of the shipped catalogs with ``name`` replaced by a link to ``target``
    (or by a FIFO)."""
    folder = tmp_path / "catalogs"
    shutil.copytree(REPO / "catalogs", folder)
    (folder / name).unlink()
    if target:
        (folder / name).symlink_to(target)
    else:
        os.mkfifo(folder / name)
    return folder


@pytest.mark.slow
def test_cli_catalog_file_linked_to_dev_zero(tmp_path):
    cat = _catalog_with(tmp_path, "racks.yaml", "/dev/zero")
    rc, out, _ = dcplan("--catalog-dir", str(cat), "catalog", "list", "racks", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "racks.yaml")
    assert "a link to /dev/zero" in out


def _scenarios(tmp_path: Path) -> dict[str, Path]:
    """Scenarios whose forecast links to /dev/zero and whose language sample is a FIFO."""
    ex = tmp_path / "ex"
    (ex / "forecasts").mkdir(parents=True)
    for name in ("baseline.yaml", "minimal.yaml"):
        shutil.copy(REPO / "examples" / name, ex)
    (ex / "forecasts" / "korea_provider.yaml").symlink_to("/dev/zero")
    req = (REPO / "examples" / "requests.yaml").read_text()
    assert "sample: ../docs/samples/ko.txt" in req
    (ex / "requests.yaml").write_text(req.replace("sample: ../docs/samples/ko.txt",
                                                  "sample: ko_fifo.txt"))
    os.mkfifo(ex / "ko_fifo.txt")
    return {"forecast": ex / "baseline.yaml", "sample": ex / "requests.yaml"}


@pytest.mark.slow
def test_cli_validate_reports_every_special_file(tmp_path, specials):
    """A FIFO scenario, /dev/zero, a catalog folder with a FIFO, a forecast linked to
    /dev/zero and a FIFO language sample: one problem each, in one run."""
    cat = _catalog_with(tmp_path, "models.yaml")
    scn = _scenarios(tmp_path)
    rc, out, wall = dcplan("validate", "fifo.txt", "/dev/zero", str(cat), str(scn["forecast"]),
                           str(scn["sample"]), cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "fifo.txt", "/dev/zero", "models.yaml", "korea_provider.yaml", "ko_fifo.txt")
    assert "field 'demand.languages.ko.sample'" in out
    print(f"validate: {wall:.1f} s")


@pytest.mark.slow
def test_cli_plan_of_a_scenario_linked_to_dev_zero(tmp_path, specials):
    (tmp_path / "s.yaml").symlink_to("/dev/zero")
    rc, out, _ = dcplan("plan", "s.yaml", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "s.yaml")


@pytest.mark.slow
def test_cli_perf_validate_a_fifo(tmp_path, specials):
    rc, out, _ = dcplan("perf", "validate", "fifo.txt", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "fifo.txt")


@pytest.mark.slow
def test_cli_aiperf_export_linked_to_dev_zero(tmp_path):
    run = tmp_path / "artifacts" / "run1"
    run.mkdir(parents=True)
    (run / "profile_export_aiperf.json").symlink_to("/dev/zero")
    rc, out, _ = dcplan("perf", "import", "aiperf", "artifacts", *AIPERF_OPTIONS,
                        "-o", "runs.csv", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "profile_export_aiperf.json")
    assert not (tmp_path / "runs.csv").exists()


@pytest.mark.slow
def test_cli_vllm_result_fifo_and_sweep_fifo(tmp_path, specials):
    rc, out, _ = dcplan("perf", "import", "vllm", "fifo.txt", *AIPERF_OPTIONS,
                        "-o", "runs.csv", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "fifo.txt")
    rc, out, _ = dcplan("sweep", "fifo.txt", "-o", "sweep_out", cwd=tmp_path)
    assert rc == 1, out
    _refused(out, "fifo.txt")
    assert not (tmp_path / "sweep_out").exists()


# --------------------------------------------------------------------------- counting in pieces


@pytest.fixture(scope="module")
def loaded():
    cat = load_catalog()
    return {t: tokens.load_tokenizer(e) for t, e in cat.entries["tokenizers"].items()}


def _whole_counts(loaded, text: str, monkeypatch) -> dict[str, int]:
    """Each tokenizer's count of the whole text, encoded in one call (no pieces).

    For Llama 3 that call is to its tiktoken encoding: llama-models' own ``encode``
    cuts a text every 400,000 characters wherever that falls (on the 1.4 M characters
    of :func:`test_a_real_text_above_a_piece_counts_as_a_whole` it counts 2 tokens
    more than the whole text has).
    """
    with monkeypatch.context() as m:
        m.setattr(tokens, "TIKTOKEN_PIECE_CHARS", 10**12)
        out = {t: tok.count(text) for t, tok in loaded.items()}
    out["llama3"] = len(_llama_tiktoken(loaded["llama3"].path).encode_ordinary(text))
    return out


@functools.cache
def _llama_tiktoken(path: Path):
    """The tiktoken encoding inside llama-models' Llama 3 tokenizer."""
    from llama_models.llama3.tokenizer import Tokenizer as LlamaTokenizer

    return LlamaTokenizer(path).model


_ATOMS = ["데이터센터", "랙", "rack", "Rack", "GPU", "72", "120kW", "1,234", "🙂", "数据中心",
          "カタ", "kW.", "...", "!?", "'s", "--", "(x)", "é", "1\u00a0000", "a\x0bb"]
_LINE_ENDS = ["\n", "\r\n", "\n\n", " \n", "\t\n", "\r\n\r\n", ".\n", "\n\n\n"]


@st.composite
def _texts(draw) -> str:
    """Lines of words (1-3 atoms) split by one space or tab, so that a safe cut comes
    at least every 30 characters; line ends of every kind, CRLF included."""
    lines = []
    for _ in range(draw(st.integers(1, 40))):
        words = ["".join(draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3)))
                 for _ in range(draw(st.integers(1, 8)))]
        seps = [draw(st.sampled_from([" ", " ", " ", "\t"])) for _ in words[1:]]
        line = words[0] + "".join(s + w for s, w in zip(seps, words[1:], strict=True))
        lines.append(line + draw(st.sampled_from(_LINE_ENDS)))
    return "".join(lines)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_texts(), bom=st.booleans())
@pytest.mark.slow
def test_counts_in_pieces_equal_whole_text_counts(loaded, monkeypatch, text, bom):
    """Read in 7-byte blocks (multi-byte characters and CRLF split across blocks) and
    counted in pieces of about 40 characters: every tokenizer's count, the characters
    and the words equal those of the whole text."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "t.txt"
        f.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
        want_text = text.replace("\r\n", "\n")
        monkeypatch.setattr(tokens, "STREAM_READ_BYTES", 7)
        monkeypatch.setattr(tokens, "STREAM_PIECE_CHARS", 40)
        monkeypatch.setattr(tokens, "TIKTOKEN_PIECE_CHARS", 25)
        pieces = list(tokens.text_pieces(f))
        assert "".join(pieces) == want_text
        ends = [sum(map(len, pieces[:i + 1])) for i in range(len(pieces) - 1)]
        assert all(tokens._SAFE_CUT.match(want_text, e) for e in ends)  # no forced cut
        got = tokens.measure_file(loaded, f)
    want = _whole_counts(loaded, want_text, monkeypatch)
    for tid, s in got.items():
        ref = loaded[tid].measure(want_text)
        assert (s.characters, s.non_space_characters, s.words) == \
            (ref.characters, ref.non_space_characters, ref.words)
        assert s.tokens == want[tid], (tid, len(pieces), text)


@pytest.mark.slow
def test_forced_cuts_change_a_count_by_at_most_one_token_each(loaded, tmp_path, monkeypatch):
    """A text with no safe cut (Chinese without spaces or line breaks, minified JSON) is
    cut anyway once a piece is full: measured, at most one token per forced cut."""
    rnd = random.Random(1)
    texts = {"cjk": "".join(rnd.choice(["数据中心", "的", "电力", "冷却", "。", "，"])
                            for _ in range(4000)),
             "json": json.dumps([{"id": i, "kw": i * 1.5} for i in range(800)],
                                separators=(",", ":"))}
    monkeypatch.setattr(tokens, "STREAM_READ_BYTES", 997)
    monkeypatch.setattr(tokens, "STREAM_PIECE_CHARS", 1000)
    for name, text in texts.items():
        f = tmp_path / f"{name}.txt"
        f.write_text(text)
        cuts = len(list(tokens.text_pieces(f))) - 1
        assert cuts >= 5
        got = tokens.measure_file(loaded, f)
        want = _whole_counts(loaded, text, monkeypatch)
        for tid in loaded:
            assert abs(got[tid].tokens - want[tid]) <= cuts, (name, tid)
            assert got[tid].characters == len(text)


@pytest.mark.slow
def test_a_real_text_above_a_piece_counts_as_a_whole(loaded, tmp_path, monkeypatch):
    """The samples repeated (about 1.4 M characters, CRLF line ends): default piece
    sizes, counts equal to one whole-text encode of each library."""
    block = (SAMPLES / "en.txt").read_text() + (SAMPLES / "ko.txt").read_text()
    text = block * 620
    assert len(text) > 1.3 * tokens.STREAM_PIECE_CHARS
    f = tmp_path / "big.txt"
    f.write_bytes(text.replace("\n", "\r\n").encode())
    got = tokens.measure_file(loaded, f)
    want = _whole_counts(loaded, text, monkeypatch)
    assert {t: s.tokens for t, s in got.items()} == want


def test_binary_and_bad_utf8_found_part_way_name_the_offset(tmp_path, monkeypatch):
    monkeypatch.setattr(tokens, "STREAM_READ_BYTES", 5)
    f = tmp_path / "a.txt"
    f.write_bytes("\ufeff첫 줄 text\n".encode() + b"more\xe9x")
    with pytest.raises(InputError, match=r"byte 0xe9 at offset 20\)"):
        tokens.measure_file({}, f)
    f.write_bytes(b"abc def \xea\xb0")  # a character cut by the end of the file
    with pytest.raises(InputError, match=r"byte 0xea at offset 8\)"):
        tokens.measure_file({}, f)
    f.write_bytes(b"0123456789ab\x00")
    with pytest.raises(InputError, match=r"NUL byte at offset 12\)"):
        tokens.measure_file({}, f)
    f.write_bytes(b"\xef\xbb\xbf \r\n\t ")
    with pytest.raises(InputError, match="holds only whitespace"):
        tokens.measure_file({}, f)


# --------------------------------------------------------------------------- bounded memory

#: Wrapper that runs a command and prints the largest resident set of its children [KiB].
_RSS = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(r.returncode)")


def _count_big(tmp_path: Path, megabytes: int) -> tuple[dict, float, float]:
    """Write ``megabytes`` of the samples and count them with o200k: (JSON, max RSS
    [MB], wall [s]); the block repeats exactly, so the expected counts are known."""
    block = ((SAMPLES / "en.txt").read_text() + (SAMPLES / "ko.txt").read_text())
    assert block[0] != " " and block.endswith("\n")
    reps = megabytes * (1 << 20) // len(block.encode()) + 1
    f = tmp_path / "corpus.txt"
    with f.open("w", encoding="utf-8") as out:
        for _ in range(reps // 100):
            out.write(block * 100)
        out.write(block * (reps % 100))
    assert f.stat().st_size > yamlio.DEFAULT_MAX_INPUT_MB * (1 << 20)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _RSS, sys.executable, "-m", "dcplan", "tokens",
                           "count", "-m", "gpt_oss_120b", "--json", str(f)],
                          capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    rss = int(done.stderr.split("MAXRSS")[1].split()[0]) / 1024
    (res,) = json.loads(done.stdout)["tokenizers"]
    one = tokens.load_tokenizer(load_catalog().get("tokenizers", "o200k_harmony")).measure(block)
    (s,) = res["files"]
    assert (s["characters"], s["words"], s["tokens"]) == \
        (reps * one.characters, reps * one.words, reps * one.tokens)
    print(f"tokens count of {f.stat().st_size / 1e6:.0f} MB: {wall:.1f} s, max RSS {rss:.0f} MB")
    return res, rss, wall


@pytest.mark.slow
def test_tokens_count_of_24_mb_in_bounded_memory(tmp_path):
    """Above the 10 MB input limit (texts have their own), in less than 250 MB: counted
    whole (before 2026-12), 24 MB of these samples took 434 MB and 60 MB 872 MB."""
    _, rss, _ = _count_big(tmp_path, 24)
    assert rss < 250


@pytest.mark.slow
def test_tokens_count_of_60_mb_in_bounded_memory(tmp_path):
    _, rss, _ = _count_big(tmp_path, 60)
    assert rss < 250


# --- data folders: a special file named like data is refused, never skipped -------------


@pytest.mark.slow
def test_a_site_file_linked_to_a_device_is_refused_not_dropped(tmp_path):
    """A site folder's *.yaml linked to /dev/zero used to be skipped silently, so the site
    dropped out of the plan; it is now refused by the reader, naming the file."""
    from dcplan.sites import load_sites

    sites = tmp_path / "sites"
    shutil.copytree(REPO / "sites", sites)
    (sites / "evil.yaml").symlink_to("/dev/zero")
    err, _took = _finishes(lambda: load_sites(sites))
    assert isinstance(err, InputError), err
    assert "evil.yaml" in str(err) and "not a regular file" in str(err)
    code, out, _took = dcplan("--sites-dir", str(sites), "catalog", "list", "sites",
                              cwd=tmp_path)
    assert code == 1
    _refused(out, "evil.yaml")


@pytest.mark.slow
def test_a_base_scenario_that_is_a_fifo_is_named_as_such(tmp_path):
    os.mkfifo(tmp_path / "base.yaml")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nname: x\n")
    code, out, _took = dcplan("validate", "child.yaml", cwd=tmp_path)
    assert code == 1 and "FIFO" in out and "not found" not in out


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_saved_plan_that_is_a_special_file_is_named_as_such(tmp_path, kind):
    """It said "saved plan not found" for a FIFO or a link to /dev/zero."""
    from dcplan.planner.saved import load_result

    path = tmp_path / "x.plan"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    err, _took = _finishes(lambda: load_result(path))
    assert isinstance(err, InputError), err
    assert "not a regular file" in str(err) and "not found" not in str(err)


@pytest.mark.slow
def test_an_output_path_that_is_a_device_or_fifo_is_refused_and_left_alone(tmp_path):
    """Writing renames a finished temporary onto the path, which would put a regular file
    in place of /dev/null or a FIFO (it once did: ``perf calibrate -o /dev/null``). The
    writer and the command line's output check refuse such a path and leave it as it was;
    a regular file or a new path is still written."""
    import stat as stat_mod

    from typer.testing import CliRunner

    from dcplan.cli import app

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (Path("/dev/null"), fifo):
        with pytest.raises(InputError, match="is not a regular file but a"), \
                yamlio.atomic_path(target) as tmp:
            tmp.write_text("x")
    assert stat_mod.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat_mod.S_ISFIFO(os.stat(fifo).st_mode)
    with yamlio.atomic_path(tmp_path / "new.txt") as tmp:
        tmp.write_text("ok")
    assert (tmp_path / "new.txt").read_text() == "ok"
    rows = REPO / "catalogs" / "measurements" / "mlperf_inference.csv"
    res = CliRunner().invoke(app, ["perf", "calibrate", str(rows), "-o", str(fifo)])
    assert res.exit_code == 1
    assert "--output: is not a regular file but a FIFO (named pipe)" in res.output
    assert stat_mod.S_ISFIFO(os.stat(fifo).st_mode)
