"""Demand stated in requests or characters, converted to tokens once when the case loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.case import load_case
from dcplan.errors import InputError
from dcplan.tokens import load_tokenizer, model_tokenizer, read_text
from dcplan.units import SECONDS_PER_DAY, SECONDS_PER_MONTH

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ROOT / "examples" / "minimal.yaml"


def _write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(f"extends: {MINIMAL}\n" + body)
    return p


@pytest.mark.slow
def test_requests_and_characters_convert_by_hand(tmp_path):
    sample = tmp_path / "ko.txt"
    sample.write_text("데이터센터 계획은 토큰 수요에서 시작한다.\n")
    p = _write(tmp_path, """
demand:
  units:
    chat: {unit: characters_per_day, language: ko}
    coding_agent: requests_per_month
  languages:
    ko: {sample: ko.txt}
  growth:
    chat: {start: 1.0e9, annual_growth: 0.0}
    coding_agent: {start: 2.0e6, annual_growth: 0.0}
""")
    case = load_case(p)
    conv = case.scenario.demand_conversions
    # coding_agent: 32,000 input + 1,500 output tokens per request (workloads.yaml).
    assert conv["coding_agent"].tokens_per_unit == 33_500
    # chat is served by llama3_70b: its tokenizer measures the sample.
    tok = load_tokenizer(model_tokenizer(case.catalog, "llama3_70b"))
    text = read_text(sample)
    ratio = tok.count(text) / len(text)
    assert conv["chat"].tokens_per_unit == pytest.approx(ratio)
    assert "llama3" in conv["chat"].how and "ko.txt" in conv["chat"].how
    d = case.scenario.demand_tokens_per_s()
    assert d["chat", "2026"] == pytest.approx(1.0e9 * ratio / SECONDS_PER_DAY)
    assert d["coding_agent", "2027"] == pytest.approx(2.0e6 * 33_500 / SECONDS_PER_MONTH)


def test_given_ratio_and_changes_keep_conversion(tmp_path):
    p = _write(tmp_path, """
demand:
  units: {chat: {unit: characters_per_month, language: en}}
  languages: {en: {tokens_per_character: 0.25, source: "our logs"}}
""")
    case = load_case(p)
    assert case.scenario.demand_conversions["chat"].tokens_per_unit == 0.25
    assert "our logs" in case.scenario.demand_conversions["chat"].how
    changed = case.with_changes({"demand.languages.en.tokens_per_character": 0.5})
    assert changed.scenario.demand_conversions["chat"].tokens_per_unit == 0.5
    a = case.scenario.demand_tokens_per_s()["chat", "2026"]
    b = changed.scenario.demand_tokens_per_s()["chat", "2026"]
    assert b == pytest.approx(2 * a)


def test_tokens_need_no_conversion():
    case = load_case(MINIMAL)
    assert {c.tokens_per_unit for c in case.scenario.demand_conversions.values()} == {1.0}


@pytest.mark.parametrize("body, field, entry, words", [
    ("demand:\n  units: {chat: characters_per_month}\n", "demand.units.chat", "chat",
     "needs a language"),
    ("demand:\n  units: {chat: {unit: characters_per_month, language: ko}}\n",
     "demand.units.chat.language", "chat", "not in demand.languages"),
    ("demand:\n  units: {chat: {unit: characters_per_month, language: ko}}\n"
     "  languages: {ko: {sample: empty.txt}}\n", "demand.languages.ko.sample", "ko",
     "empty"),
    ("demand:\n  units: {chat: {unit: characters_per_month, language: ko}}\n"
     "  languages: {ko: {sample: missing.txt}}\n", "demand.languages.ko.sample", "ko",
     "not found"),
    ("demand:\n  languages: {ko: {}}\n", "demand.languages.ko", "ko", "either sample"),
    ("demand:\n  units: {rag: requests_per_month}\n", "demand.units.rag", None,
     "not a workload of this scenario"),
    ("overrides:\n  - {kind: workloads, id: chat, field: model, set: llama2_70b}\n"
     "demand:\n  units: {chat: {unit: characters_per_month, language: ko}}\n"
     "  languages: {ko: {sample: ko.txt}}\n", "demand.languages.ko.sample", "chat",
     "tokens_per_character instead"),
])
@pytest.mark.slow
def test_bad_demand_units_name_file_entry_field(tmp_path, body, field, entry, words):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "ko.txt").write_text("한국어 문장입니다.")
    p = _write(tmp_path, body)
    with pytest.raises(InputError) as exc:
        load_case(p)
    probs = [q for q in exc.value.problems if q.field == field]
    assert probs, [str(q) for q in exc.value.problems]
    assert probs[0].file.endswith("s.yaml")
    assert probs[0].entry == entry
    assert words in probs[0].message


@pytest.mark.slow
def test_requests_example_plans_and_its_demand_table_shows_the_conversion():
    """examples/requests.yaml (chat in Korean characters, agents in requests) plans, serves
    all demand, and its demand table gives the stated figure, the tokens per unit and the
    conversion, with tokens = stated x tokens per unit."""
    from dcplan.planner import solve_case

    res = solve_case(ROOT / "examples" / "requests.yaml", explain=False, size=False)
    assert res.ok
    dem = res.tables["demand"]
    conv = res.case.scenario.demand_conversions
    for row in dem.itertuples():
        assert row.demand_unit == conv[row.workload].unit
        assert row.tokens_per_unit == pytest.approx(conv[row.workload].tokens_per_unit)
        assert row.conversion == conv[row.workload].how
        assert row.demand_stated * row.tokens_per_unit / SECONDS_PER_MONTH == pytest.approx(
            row.demand_tokens_per_s_avg)
    first = dem[dem.period == "2026"].set_index("workload")
    assert first.loc["coding_agent", "demand_stated"] == pytest.approx(3.28e8)
    assert first.loc["chat", "demand_stated"] == pytest.approx(78.0e12)
    assert conv["coding_agent"].tokens_per_unit == 33_500
    assert "llama3" in conv["chat"].how
