"""dcplan perf import: AIPerf and vLLM benchmark results as serving-measurement rows.

The AIPerf importer is tested on output of the real tool: ``aiperf profile`` runs against
a small OpenAI-compatible stub server on 127.0.0.1 whose delays and token counts are
known, so the imported row can be checked against what the stub served. AIPerf counts
tokens with a byte-level tokenizer that the test writes (one token per byte, no download).

vLLM's benchmark (``vllm bench serve``) needs a GPU server, so the vLLM importer is tested
on a hand-written fixture in the documented result format (see
``tests/fixtures/perf/import/README.md``).
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.perf.importers import (
    SERVING_COLUMNS,
    Deployment,
    format_serving_csv,
    import_aiperf,
    import_vllm,
    write_serving_csv,
)

FIXTURES = Path(__file__).parent / "fixtures" / "perf" / "import"
VLLM_FIXTURE = FIXTURES / "vllm_bench_serve_result.json"
AIPERF_FIXTURE = FIXTURES / "aiperf_profile_export.json"
# The shared reference data lies beside the checkout (../shared), or further up.
SHARED_SERVING = next((p / "shared" / "reference" / "serving"
                       for p in Path(__file__).resolve().parents[1:]
                       if (p / "shared" / "reference" / "serving").is_dir()), None)
#: Its distinct parallel configurations, shipped (tests/fixtures/perf/README.md).
REFERENCE_CONFIGURATIONS = FIXTURES.parent / "inferencex_configurations.csv"

runner = CliRunner()

# What the stub serves: every response streams exactly the requested number of tokens
# (one byte each), the first after TTFT_S, the next ones ITL_S apart.
TTFT_S = 0.05
ITL_S = 0.01
ISL = 64
OSL = 20
REQUESTS = 10
STUB_GPUS = 2
STUB_POWER_W = (600.0, 620.0)  # per GPU, plus 0-6 W of noise


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# --------------------------------------------------------------------------- stub server


class StubServer:
    """OpenAI-compatible stub on 127.0.0.1 (free port), recording what it served."""

    def __init__(self):
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, obj, code=200):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                if self.path == "/v1/models":
                    return self._json({"object": "list",
                                       "data": [{"id": "stub", "object": "model"}]})
                if self.path == "/metrics":  # DCGM exporter format, for GPU telemetry
                    noise = time.monotonic_ns() // 1000 % 7
                    lines = ["# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
                    for gpu, watts in enumerate(STUB_POWER_W):
                        labels = (f'gpu="{gpu}",UUID="GPU-{gpu:08d}",device="nvidia{gpu}",'
                                  f'modelName="NVIDIA H200",Hostname="stub"')
                        lines.append(f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {watts + noise}")
                    body = ("\n".join(lines) + "\n").encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return None
                return self._json({"error": "not found"}, 404)

            def do_POST(self):  # noqa: N802
                arrived = time.monotonic()
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length))
                chat = self.path == "/v1/chat/completions"
                if not chat and self.path != "/v1/completions":
                    return self._json({"error": "not found"}, 404)
                if chat:
                    prompt = "".join(
                        m["content"] if isinstance(m["content"], str)
                        else "".join(p.get("text", "") for p in m["content"])
                        for m in req["messages"])
                else:
                    prompt = req["prompt"] if isinstance(req["prompt"], str) else "".join(
                        req["prompt"])
                n_in = len(prompt.encode())  # the byte-level tokenizer: one token a byte
                n_out = int(req.get("max_completion_tokens") or req.get("max_tokens") or 16)
                usage = {"prompt_tokens": n_in, "completion_tokens": n_out,
                         "total_tokens": n_in + n_out}
                kind = "chat.completion" if chat else "text_completion"
                if req.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    time.sleep(TTFT_S)
                    for i in range(n_out):
                        if i:
                            time.sleep(ITL_S)
                        choice = ({"index": 0, "delta": {"content": "x"}, "finish_reason": None}
                                  if chat else {"index": 0, "text": "x", "finish_reason": None})
                        self._event({"id": "s", "object": f"{kind}.chunk" if chat else kind,
                                     "model": req.get("model"), "choices": [choice]})
                    self._event({"id": "s", "object": f"{kind}.chunk" if chat else kind,
                                 "model": req.get("model"), "choices": [], "usage": usage})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    time.sleep(TTFT_S + ITL_S * (n_out - 1))
                    text = "x" * n_out
                    choice = ({"index": 0, "message": {"role": "assistant", "content": text},
                               "finish_reason": "length"} if chat
                              else {"index": 0, "text": text, "finish_reason": "length"})
                    self._json({"id": "s", "object": kind, "model": req.get("model"),
                                "choices": [choice], "usage": usage})
                with stub.lock:
                    stub.requests.append({"path": self.path, "stream": bool(req.get("stream")),
                                          "input_tokens": n_in, "output_tokens": n_out,
                                          "start": arrived, "end": time.monotonic()})
                return None

            def _event(self, obj):
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def take(self) -> list[dict]:
        with self.lock:
            served, self.requests = self.requests, []
        return served


def byte_tokenizer(folder: Path) -> Path:
    """A Hugging Face tokenizer with one token per byte (no merges), written to ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1_000_000}))
    return folder


def run_aiperf(url: str, tokenizer: Path, artifacts: Path, *extra: str) -> None:
    """``aiperf profile`` against the stub; only loopback traffic (see the environment)."""
    env = {**os.environ,
           # Any attempt to reach outside goes to a dead loopback port instead.
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
           "HF_HOME": str(artifacts.parent / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1",
           "DO_NOT_TRACK": "1"}
    cmd = [sys.executable, "-m", "aiperf", "profile", "--model", "stub",
           "--tokenizer", str(tokenizer), "--url", url, "--isl", str(ISL), "--osl", str(OSL),
           "--request-count", str(REQUESTS), "--no-server-metrics", "--ui", "none",
           "--request-timeout-seconds", "30", "--artifact-dir", str(artifacts), *extra]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def runs_of(served: list[dict]) -> list[list[dict]]:
    """Split the stub's requests into the sweep's benchmark runs.

    AIPerf runs them one after the other, each with REQUESTS requests, so in order of
    arrival the first REQUESTS requests are the first run (robust on a loaded machine,
    where a pause between requests says nothing).
    """
    served = sorted(served, key=lambda r: r["start"])
    runs = [served[i:i + REQUESTS] for i in range(0, len(served), REQUESTS)]
    for first, second in zip(runs, runs[1:], strict=False):
        assert max(r["end"] for r in first) <= min(r["start"] for r in second) + 1e-3
    return runs


@pytest.fixture(scope="module")
def aiperf_runs(tmp_path_factory):
    """Two real AIPerf invocations: a streaming chat sweep at concurrency 1 and 2 with GPU
    telemetry, and a non-streaming completions run at concurrency 2."""
    if importlib.util.find_spec("aiperf") is None:
        pytest.fail("AIPerf is not installed: pip install -e '.[test]' installs it")
    base = tmp_path_factory.mktemp("aiperf")
    tokenizer = byte_tokenizer(base / "tokenizer")
    with StubServer() as stub:
        run_aiperf(stub.url, tokenizer, base / "sweep", "--endpoint-type", "chat",
                   "--streaming", "--concurrency", "1,2",
                   "--gpu-telemetry", f"{stub.url}/metrics")
        sweep = stub.take()
        run_aiperf(stub.url, tokenizer, base / "plain", "--endpoint-type", "completions",
                   "--concurrency", "2", "--no-gpu-telemetry")
        plain = stub.take()
    return {"sweep": base / "sweep", "sweep_served": sweep,
            "plain": base / "plain", "plain_served": plain}


# --------------------------------------------------------------------------- AIPerf


def deployment(**kw) -> Deployment:
    args = {"hardware": "h200_sxm", "model": "llama3_70b", "precision": "fp8",
            "gpus": STUB_GPUS, "tp": STUB_GPUS}
    return Deployment(**{**args, **kw})


@pytest.mark.slow
def test_aiperf_sweep_imports_what_the_stub_served(aiperf_runs, catalog):
    served = aiperf_runs["sweep_served"]
    # The stub saw every request with the intended token counts.
    assert len(served) == 2 * REQUESTS
    assert {(r["path"], r["stream"], r["input_tokens"], r["output_tokens"]) for r in served} \
        == {("/v1/chat/completions", True, ISL, OSL)}
    notes: list[str] = []
    rows = import_aiperf(aiperf_runs["sweep"], catalog, deployment(framework="stub"), notes)
    assert notes == []
    assert [r["concurrency"] for r in rows] == [1, 2]  # one row per run, by concurrency
    served_runs = runs_of(served)
    assert [len(run) for run in served_runs] == [REQUESTS, REQUESTS]
    for row, run in zip(rows, served_runs, strict=True):
        c = row["concurrency"]
        assert set(row) == set(SERVING_COLUMNS)
        assert (row["hardware"], row["model"], row["precision"], row["gpus"]) == \
            ("h200_sxm", "llama3_70b", "fp8", STUB_GPUS)
        assert (row["prefill_tp"], row["decode_tp"], row["prefill_ep"], row["decode_ep"]) == \
            (STUB_GPUS, STUB_GPUS, 1, 1)
        assert row["disaggregated"] is False and row["speculative"] == "none"
        assert row["framework"] == "stub"
        assert (row["input_tokens"], row["output_tokens"]) == (ISL, OSL)
        # Latency: never below what the stub waited, and not far above it.
        assert TTFT_S <= row["median_ttft_s"] <= row["p99_ttft_s"] < TTFT_S + 0.25
        assert ITL_S * 1e3 <= row["median_tpot_ms"] <= row["p99_tpot_ms"] < ITL_S * 1e3 + 15
        assert row["median_tokens_per_s_per_user"] == pytest.approx(
            1e3 / row["median_tpot_ms"], rel=0.02)
        # Throughput per GPU: output tokens the stub served over the time it was busy
        # with this run, divided by the GPUs.
        busy_s = max(r["end"] for r in run) - min(r["start"] for r in run)
        expected = sum(r["output_tokens"] for r in run) / busy_s / STUB_GPUS
        assert row["output_tokens_per_s_per_gpu"] == pytest.approx(expected, rel=0.10)
        # Physics of the stub: a request takes at least TTFT + (OSL - 1) * ITL.
        ceiling = c * OSL / (TTFT_S + (OSL - 1) * ITL_S) / STUB_GPUS
        assert 0.5 * ceiling < row["output_tokens_per_s_per_gpu"] <= ceiling * 1.001
        # Same duration, so total / output = (input + output) / output tokens.
        assert row["total_tokens_per_s_per_gpu"] / row["output_tokens_per_s_per_gpu"] == \
            pytest.approx((ISL + OSL) / OSL, rel=1e-6)
        # Power: mean over the stub's two GPUs (600 W and 620 W, plus 0-6 W noise).
        assert 610 <= row["power_w_per_gpu"] <= 616
        assert row["date"] in {str(dt.date.today()), str(dt.date.today() - dt.timedelta(1))}
        assert row["source"].startswith("AIPerf 0.13")
    # Concurrency 2 keeps twice the requests in flight: about twice the throughput.
    assert rows[1]["output_tokens_per_s_per_gpu"] / rows[0]["output_tokens_per_s_per_gpu"] \
        == pytest.approx(2.0, rel=0.2)


@pytest.mark.slow
def test_aiperf_non_streaming_run_has_no_latency_split(aiperf_runs, catalog):
    served = aiperf_runs["plain_served"]
    assert {(r["path"], r["stream"]) for r in served} == {("/v1/completions", False)}
    notes: list[str] = []
    rows = import_aiperf(aiperf_runs["plain"] / "profile_export_aiperf.json", catalog,
                         deployment(gpus=4), notes)
    (row,) = rows
    assert row["concurrency"] == 2 and (row["input_tokens"], row["output_tokens"]) == (ISL, OSL)
    assert row["median_ttft_s"] is None and row["median_tpot_ms"] is None
    assert any("--streaming" in n for n in notes)
    busy_s = max(r["end"] for r in served) - min(r["start"] for r in served)
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(
        REQUESTS * OSL / busy_s / 4, rel=0.10)
    assert row["power_w_per_gpu"] is None


@pytest.mark.slow
def test_cli_imports_aiperf_artifacts_folder(aiperf_runs, tmp_path):
    out = tmp_path / "runs.csv"
    args = ["perf", "import", "aiperf", str(aiperf_runs["sweep"]), "--hardware", "h200_sxm",
            "--model", "llama3_70b", "--precision", "fp8", "--gpus", "2", "--tp", "2"]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 2 rows" in result.stdout
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["concurrency"] for r in rows] == ["1", "2"]
    assert list(rows[0]) == list(SERVING_COLUMNS)
    # Appending the same runs again adds nothing; stdout without -o is the CSV itself.
    again = runner.invoke(app, [*args, "-o", str(out), "--append"])
    assert again.exit_code == 0 and "added 0 rows" in again.stdout
    assert "already there" in again.stdout
    printed = runner.invoke(app, args)
    assert printed.exit_code == 0
    assert printed.stdout == out.read_text()


def test_aiperf_fixture_from_the_real_tool(catalog):
    """The stored AIPerf 0.13 export (made against the stub above) imports as expected."""
    data = json.loads(AIPERF_FIXTURE.read_text())
    (row,) = import_aiperf(AIPERF_FIXTURE, catalog, deployment())
    assert row["concurrency"] == 2 and (row["input_tokens"], row["output_tokens"]) == (ISL, OSL)
    assert row["output_tokens_per_s_per_gpu"] == data["output_token_throughput"]["avg"] / 2
    # AIPerf divides by its profiling window, within a few ms of benchmark_duration.
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(
        data["total_osl"]["avg"] / data["benchmark_duration"]["avg"] / STUB_GPUS, rel=0.02)
    assert row["median_ttft_s"] == pytest.approx(data["time_to_first_token"]["p50"] / 1e3)
    assert row["p99_tpot_ms"] == pytest.approx(data["inter_token_latency"]["p99"])
    gpus = data["telemetry_data"]["endpoints"].popitem()[1]["gpus"].values()
    assert row["power_w_per_gpu"] == pytest.approx(
        sum(g["metrics"]["nvidia_power_usage"]["avg"] for g in gpus) / 2)


def _edited_aiperf(tmp_path: Path, edit) -> Path:
    data = json.loads(AIPERF_FIXTURE.read_text())
    edit(data)
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(data))
    return path


def test_aiperf_missing_fields_named_all_at_once(catalog, tmp_path):
    def edit(d):
        del d["output_token_throughput"]
        del d["input_sequence_length"]
        d["output_sequence_length"]["avg"] = "twenty"
    path = _edited_aiperf(tmp_path, edit)
    with pytest.raises(InputError) as err:
        import_aiperf(path, catalog, deployment(hardware="h200"))
    text = str(err.value)
    assert "4 problems" in text
    assert "field 'output_token_throughput': missing" in text
    assert "field 'input_sequence_length': missing" in text
    assert "field 'output_sequence_length.avg': not a finite number ('twenty')" in text
    assert "did you mean 'h200_sxm'" in text
    assert all(p.file.endswith("profile_export_aiperf.json") or p.file == "<options>"
               for p in err.value.problems)


def test_aiperf_open_loop_run_refused(catalog, tmp_path):
    def edit(d):
        d["input_config"]["phases"][0]["type"] = "poisson"
    with pytest.raises(InputError) as err:
        import_aiperf(_edited_aiperf(tmp_path, edit), catalog, deployment())
    (problem,) = err.value.problems
    assert problem.field == "input_config.phases[0].type"
    assert "fixed concurrency" in problem.message


def test_aiperf_older_loadgen_config(catalog, tmp_path):
    """AIPerf before the phase configs recorded the load in input_config.loadgen."""
    def edit(d):
        d["input_config"] = {"loadgen": {"concurrency": 4, "request_rate": None}}
    (row,) = import_aiperf(_edited_aiperf(tmp_path, edit), catalog, deployment())
    assert row["concurrency"] == 4

    def rate(d):
        d["input_config"] = {"loadgen": {"concurrency": None, "request_rate": 5.0}}
    with pytest.raises(InputError, match="loadgen.request_rate.*5.0 per second"):
        import_aiperf(_edited_aiperf(tmp_path, rate), catalog, deployment())


def test_aiperf_telemetry_for_other_gpus_leaves_power_empty(catalog):
    notes: list[str] = []
    (row,) = import_aiperf(AIPERF_FIXTURE, catalog, deployment(gpus=8, tp=8), notes)
    assert row["power_w_per_gpu"] is None
    assert any("power for 2 GPUs" in n for n in notes)
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(
        import_aiperf(AIPERF_FIXTURE, catalog, deployment())[0]["output_tokens_per_s_per_gpu"]
        * STUB_GPUS / 8)


def test_aiperf_wrong_files(catalog, tmp_path):
    with pytest.raises(InputError, match="vllm bench serve' result.*import vllm"):
        import_aiperf(VLLM_FIXTURE, catalog, deployment())
    junk = tmp_path / "junk.json"
    junk.write_text("<html>not json</html>")
    with pytest.raises(InputError, match=r"junk.json:1: not JSON"):
        import_aiperf(junk, catalog, deployment())
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="not an AIPerf export"):
        import_aiperf(other, catalog, deployment())
    aggregate = tmp_path / "agg.json"
    aggregate.write_text(json.dumps({"aiperf_version": "0.13.0", "metadata": {
        "aggregation_type": "confidence"}}))
    with pytest.raises(InputError, match="aggregate over repeated runs"):
        import_aiperf(aggregate, catalog, deployment())
    with pytest.raises(InputError, match="no profile_export_aiperf.json in this folder"):
        import_aiperf(tmp_path, catalog, deployment())
    with pytest.raises(InputError, match="file not found"):
        import_aiperf(tmp_path / "missing.json", catalog, deployment())


# --------------------------------------------------------------------------- vLLM


def test_vllm_fixture_hand_computed(catalog):
    """Hand-written result in vLLM's documented format (vLLM's benchmark needs a GPU)."""
    (row,) = import_vllm(VLLM_FIXTURE, catalog, deployment(gpus=8, tp=8, framework="vllm"))
    expected = {
        "hardware": "h200_sxm", "model": "llama3_70b", "precision": "fp8",
        "input_tokens": 1024, "output_tokens": 1024,  # 204,800 tokens / 200 requests
        "concurrency": 32, "gpus": 8, "disaggregated": False,
        "prefill_gpus": None, "decode_gpus": None,
        "prefill_tp": 8, "prefill_ep": 1, "decode_tp": 8, "decode_ep": 1,
        "decode_dp_attention": False, "speculative": "none",
        "output_tokens_per_s_per_gpu": 2048.0 / 8, "total_tokens_per_s_per_gpu": 4096.0 / 8,
        "median_tokens_per_s_per_user": pytest.approx(1000 / 14.0),
        "median_ttft_s": 0.25, "p99_ttft_s": 0.9, "median_tpot_ms": 14.0, "p99_tpot_ms": 18.0,
        "power_w_per_gpu": None, "framework": "vllm", "date": "2025-08-15",
    }
    assert {k: row[k] for k in expected} == expected
    assert "meta-llama/Meta-Llama-3-70B-Instruct" in row["source"]


def test_vllm_append_result_lines_and_options(catalog, tmp_path):
    base = json.loads(VLLM_FIXTURE.read_text())
    lines = tmp_path / "results.jsonl"
    second = {**base, "max_concurrency": 64, "output_throughput": 3000.0}
    lines.write_text(json.dumps(base) + "\n" + json.dumps(second) + "\n")
    dep = deployment(model="deepseek_r1", gpus=16, prefill_gpus=None, tp=8, ep=8,
                     dp_attention=True, speculative="mtp", date="2025-08-20", source="my lab")
    rows = import_vllm(lines, catalog, dep)
    assert [r["concurrency"] for r in rows] == [32, 64]
    assert rows[1]["output_tokens_per_s_per_gpu"] == 3000.0 / 16
    assert {(r["decode_ep"], r["decode_dp_attention"], r["speculative"], r["date"],
             r["source"]) for r in rows} == {(8, True, "mtp", "2025-08-20", "my lab")}


def test_vllm_disaggregated_divides_by_all_gpus(catalog):
    dep = deployment(model="deepseek_r1", gpus=None, tp=None, prefill_gpus=8, decode_gpus=16,
                     prefill_tp=8, prefill_ep=8, decode_tp=8, decode_ep=16)
    (row,) = import_vllm(VLLM_FIXTURE, catalog, dep)
    assert (row["gpus"], row["disaggregated"], row["prefill_gpus"], row["decode_gpus"]) == \
        (24, True, 8, 16)
    assert (row["prefill_tp"], row["prefill_ep"], row["decode_tp"], row["decode_ep"]) == \
        (8, 8, 8, 16)
    assert row["output_tokens_per_s_per_gpu"] == 2048.0 / 24


def _edited_vllm(tmp_path: Path, edit) -> Path:
    data = json.loads(VLLM_FIXTURE.read_text())
    edit(data)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    return path


def test_vllm_bad_results(catalog, tmp_path):
    def missing(d):
        del d["completed"]
        d["total_output_tokens"] = "lots"
    with pytest.raises(InputError) as err:
        import_vllm(_edited_vllm(tmp_path, missing), catalog, deployment())
    fields = {p.field for p in err.value.problems}
    assert fields == {"completed", "total_output_tokens"}
    assert all(p.file.endswith("result.json") for p in err.value.problems)

    def open_loop(d):
        d["request_rate"] = 10.0
    with pytest.raises(InputError, match="field 'request_rate'.*open loop"):
        import_vllm(_edited_vllm(tmp_path, open_loop), catalog, deployment())

    def unlimited(d):
        d["max_concurrency"] = None
    with pytest.raises(InputError, match="field 'max_concurrency': null"):
        import_vllm(_edited_vllm(tmp_path, unlimited), catalog, deployment())

    with pytest.raises(InputError, match="AIPerf export, not a vllm bench serve result"):
        import_vllm(AIPERF_FIXTURE, catalog, deployment())


def test_vllm_non_streaming_leaves_latency_empty(catalog, tmp_path):
    def edit(d):
        for k in ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms"):
            d[k] = 0.0
        d["failed"] = 3
    notes: list[str] = []
    (row,) = import_vllm(_edited_vllm(tmp_path, edit), catalog, deployment(), notes)
    assert row["median_ttft_s"] is None and row["median_tokens_per_s_per_user"] is None
    assert len(notes) == 3 and any("3 requests failed" in n for n in notes)


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("kw, field, text", [
    ({"hardware": "h200"}, "--hardware", "did you mean 'h200_sxm'"),
    ({"hardware": "gb200_nvl72"}, "--hardware", "is a rack; give its accelerator id "
                                                "'gb200_gpu'"),
    ({"model": "deepseek"}, "--model", "did you mean 'deepseek_r1'"),
    ({"precision": "fp16"}, "--precision", "choose from bf16, fp8, fp4"),
    ({"hardware": "h100_sxm", "precision": "fp4"}, "--precision",
     "h100_sxm does not support fp4"),
    ({"tp": 16, "gpus": 8}, "--tp", "tensor parallelism 16 is more than 8 GPUs"),
    ({"tp": 3, "gpus": 8}, "--tp", "does not divide 8 GPUs"),
    ({"ep": 2}, "--ep", "llama3_70b is dense"),
    ({"tp": None}, "--tp", "tensor-parallel size"),
    ({"gpus": None}, "--gpus", "number of GPUs"),
    ({"speculative": "eagle"}, "--speculative", "none, mtp, draft"),
    ({"date": "15.08.2025"}, "--date", "YYYY-MM-DD"),
    ({"prefill_gpus": 8}, "--decode-gpus", "needs both"),
    ({"prefill_gpus": 8, "decode_gpus": 8, "gpus": 12}, "--gpus", "16"),
    ({"decode_tp": 4}, "--decode-tp", "only to disaggregated serving"),
    ({"model": "deepseek_r1", "gpus": 512, "tp": 8, "ep": 512}, "--ep", "exceeds"),
])
def test_bad_options_name_the_option(catalog, kw, field, text):
    with pytest.raises(InputError) as err:
        import_vllm(VLLM_FIXTURE, catalog, deployment(**kw))
    hits = [p for p in err.value.problems if p.field == field]
    assert hits and text in hits[0].message, err.value.problems
    assert hits[0].file == "<options>"


def test_shared_reference_configurations_are_accepted(catalog):
    """Every parallel configuration of the shared InferenceX file passes the option check.

    The configurations are an extract of the file (tests/fixtures/perf/README.md); where
    the file lies beside the checkout, the extract is checked against it."""
    from dcplan.perf.importers import deployment_columns

    def first_of_each(lines: list[str]) -> list[str]:
        keys: set[tuple[str, ...]] = set()
        out = [lines[0]]
        for line, r in zip(lines[1:], csv.reader(lines[1:]), strict=True):
            key = tuple(r[6:16])
            if key not in keys:
                keys.add(key)
                out.append(line)
        return out

    extract = REFERENCE_CONFIGURATIONS.read_text().splitlines()
    if SHARED_SERVING is not None:
        shared = (SHARED_SERVING / "inferencex_deepseek_r1.csv").read_text().splitlines()
        assert extract == first_of_each(shared)
    assert extract[0] == ",".join(SERVING_COLUMNS)  # same schema
    assert first_of_each(extract) == extract  # one row per configuration
    seen = set()
    for r in csv.DictReader(extract):
        disagg = r["disaggregated"] == "true"
        key = tuple(r[c] for c in SERVING_COLUMNS[6:16])
        seen.add(key)
        num = {c: int(r[c]) if r[c] else None for c in (
            "gpus", "prefill_gpus", "decode_gpus", "prefill_tp", "prefill_ep",
            "decode_tp", "decode_ep")}
        dep = Deployment(
            hardware=r["hardware"], model=r["model"], precision=r["precision"],
            gpus=num["gpus"], speculative=r["speculative"],
            dp_attention=r["decode_dp_attention"] == "true",
            **({"prefill_gpus": num["prefill_gpus"], "decode_gpus": num["decode_gpus"],
                "prefill_tp": num["prefill_tp"], "prefill_ep": num["prefill_ep"],
                "decode_tp": num["decode_tp"], "decode_ep": num["decode_ep"]} if disagg
               else {"tp": num["decode_tp"], "ep": num["decode_ep"]}))
        cols = deployment_columns(catalog, dep)
        assert tuple(format_serving_csv([cols], header=False).split(",")[6:16]) == key
    assert len(seen) > 50


# --------------------------------------------------------------------------- CSV and CLI


def test_writer_appends_only_to_serving_csv(catalog, tmp_path):
    rows = import_vllm(VLLM_FIXTURE, catalog, deployment())
    out = tmp_path / "serving.csv"
    assert write_serving_csv(rows, out) == (1, 0)
    assert write_serving_csv(rows, out, append=True) == (0, 1)
    other = {**rows[0], "concurrency": 64}
    assert write_serving_csv([other], out, append=True) == (1, 0)
    text = out.read_text()
    assert text.splitlines()[0] == ",".join(SERVING_COLUMNS)
    assert len(text.splitlines()) == 3
    # Written rows read back to the same values.
    back = list(csv.DictReader(text.splitlines()))
    assert back[1]["concurrency"] == "64" and back[0]["disaggregated"] == "false"
    assert float(back[0]["median_ttft_s"]) == 0.25 and back[0]["power_w_per_gpu"] == ""
    foreign = tmp_path / "mlperf.csv"
    foreign.write_text("hardware,model,precision,phase\nh200_sxm,llama3_70b,fp8,decode\n")
    with pytest.raises(InputError, match="cannot append: its header"):
        write_serving_csv(rows, foreign, append=True)
    assert foreign.read_text().startswith("hardware,model,precision,phase\n")  # untouched


def test_cli_vllm_errors_and_usage(tmp_path):
    base = ["perf", "import", "vllm", str(VLLM_FIXTURE), "--model", "llama3_70b",
            "--precision", "fp8", "--gpus", "8", "--tp", "8"]
    result = runner.invoke(app, [*base, "--hardware", "h20"])
    assert result.exit_code == 1
    assert "did you mean 'h200_sxm'" in result.stderr and "Traceback" not in result.output
    result = runner.invoke(app, [*base, "--hardware", "h200_sxm", "--append"])
    assert result.exit_code == 2 and "give -o FILE" in result.stderr
    result = runner.invoke(app, ["perf", "import", "vllm", str(VLLM_FIXTURE),
                                 "--hardware", "h200_sxm"])
    assert result.exit_code == 2  # required options missing
    out = tmp_path / "runs.csv"
    result = runner.invoke(app, [*base, "--hardware", "h200_sxm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 1 row to" in result.stdout
    (row,) = list(csv.DictReader(out.open()))
    assert row["output_tokens_per_s_per_gpu"] == "256.0" and row["concurrency"] == "32"


def test_imported_rows_pass_the_rules_validate_applies(catalog, tmp_path):
    """What an importer writes, 'perf validate' reads: rows it would refuse are refused here."""
    with pytest.raises(InputError) as info:  # llama3_70b has no MTP module
        import_vllm(VLLM_FIXTURE, catalog, deployment(gpus=8, tp=8, framework="vllm",
                                                      speculative="mtp"))
    (p,) = info.value.problems
    assert p.field == "speculative" and "multi-token-prediction" in p.message
    data = json.loads(VLLM_FIXTURE.read_text())
    data["output_throughput"] = -5.0
    bad = tmp_path / "negative.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        import_vllm(bad, catalog, deployment(gpus=8, tp=8, framework="vllm"))
    assert any(p.field == "output_tokens_per_s_per_gpu" for p in info.value.problems)
    data = json.loads(VLLM_FIXTURE.read_text())
    data["total_input_tokens"] = 200 * 200_000  # 200k-token prompts: beyond llama3_70b's context
    long = tmp_path / "long.json"
    long.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        import_vllm(long, catalog, deployment(gpus=8, tp=8, framework="vllm"))
    assert any(p.field == "input_tokens" and "context" in p.message
               for p in info.value.problems)
