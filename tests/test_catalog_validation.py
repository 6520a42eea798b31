"""Validation rules of the catalog loader: one broken fixture per rule."""

from __future__ import annotations

import re

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.schema import KINDS, OPTIONAL_KINDS

BROKEN = "broken"


def load_with(fixtures, min_catalog_dir, name):
    """Load the minimal catalog with one kind replaced by a broken fixture file."""
    path = fixtures / BROKEN / name
    kind = name.split(".")[0]
    return load_catalog(min_catalog_dir, extra_files={kind: path})


def problems_of(fixtures, min_catalog_dir, name):
    with pytest.raises(InputError) as info:
        load_with(fixtures, min_catalog_dir, name)
    return info.value.problems


def test_minimal_fixture_is_valid(min_catalog_dir):
    catalog = load_catalog(min_catalog_dir)
    # optional kinds (e.g. ups, generators) may be absent: the folder still loads
    assert set(KINDS) - OPTIONAL_KINDS <= set(catalog.entries) <= set(KINDS)
    assert "ups" not in catalog.entries
    assert catalog.get("racks", "test_rack").accelerators_per_rack == 8


@pytest.mark.parametrize(
    ("name", "entry", "field", "line", "pattern"),
    [
        ("racks.unknown_field.yaml", "test_rack", "cooling_typ", 21,
         r"unknown field; did you mean 'cooling'\?"),
        ("racks.missing_field.yaml", "test_rack", "capex_usd", 2, r"required field is missing"),
        ("accelerators.negative.yaml", "test_gpu", "hbm_tb_per_s", 6,
         r"must be > 0(\.0)? \(got -4\.0\)"),
        ("racks.out_of_range.yaml", "test_rack", "liquid_heat_frac", 10,
         r"must be <= 1(\.0)? \(got 1\.5\)"),
        ("racks.unknown_reference.yaml", "test_rack", "accelerator", 5,
         r"unknown accelerator 'test_gpuu' \(did you mean 'test_gpu'\?\)"),
        ("models.duplicate_id.yaml", "test_model", "id", 17, r"duplicate id \(first at line 2\)"),
        ("workloads.bad_id.yaml", "Chat-Large", "id", 2,
         r"not a valid id; use only lowercase letters, digits and '_'"),
        ("accelerators.idle_above_max.yaml", "test_gpu", None, 2,
         r"idle_power_w \(1200.*\) must be below max_power_w"),
        ("racks.bad_date.yaml", "test_rack", "first_available", 18,
         r"'H2 2027' is not a date; write YYYY-MM or YYYY-MM-DD"),
        ("models.bad_estimates.yaml", "test_model", None, 2,
         r"'estimates' names unknown field\(s\) \['hbm_gb'\]"),
        ("workloads.bad_enum.yaml", "test_chat", "precision", 8, r"'int3' is not allowed"),
        ("models.moe_incomplete.yaml", "test_model", None, 2,
         r"MoE models need experts_total, experts_active and expert_ffn_size together"),
        ("models.unknown_tokenizer.yaml", "test_model", "tokenizer", 15,
         r"unknown tokenizer 'test_tokk' \(did you mean 'test_tok'\?\)"),
        ("models.tokenizer_too_big.yaml", "test_model", "tokenizer", 15,
         r"tokenizer 'test_tok' has 128,000 base tokens, more than this model's vocab_size "
         r"32,000"),
        ("tokenizers.bad_sha.yaml", "test_tok", "sha256", 8,
         r"'82E9D319' is not a SHA-256 \(64 lowercase hexadecimal digits\)"),
        ("tokenizers.no_encoding.yaml", "test_tok", None, 2,
         r"the tiktoken reader needs 'encoding'"),
        ("tokenizers.path_escape.yaml", "test_tok", None, 2,
         r"file must be a path inside the package folder; remove '\.\.'"),
        ("api_prices.no_source.yaml", "test_api", "source", 2, r"required field is missing"),
        ("api_prices.source_not_url.yaml", "test_api", None, 2,
         r"source must include the URL of the price page"),
        ("api_prices.cached_above_input.yaml", "test_api", None, 2,
         r"cached_input_usd_per_mtok \(10\.0\) exceeds input_usd_per_mtok \(1\.0\)"),
        ("api_prices.class_without_name.yaml", "test_api", None, 2,
         r"class_models needs model_class"),
        ("api_prices.unknown_model.yaml", "test_api", "models", 6,
         r"unknown model 'test_modle' \(did you mean 'test_model'\?\)"),
        ("staffing.bad_basis.yaml", "test_crew", "basis", 4, r"'per_building' is not allowed"),
        ("salaries.duplicate_role_country.yaml", "test_crew_kr_2", "country", 13,
         r"a second salary for role 'test_crew' in KR \(first: 'test_crew_kr'\)"),
        ("salaries.unknown_role.yaml", "test_crew_kr", "role", 4,
         r"unknown staffing role 'test_crw' \(did you mean 'test_crew'\?\)"),
        ("salaries.bad_country.yaml", "test_crew_kr", "country", 5,
         r"'Korea' is not an ISO 3166 two-letter country code"),
        ("software.bad_licensed_per.yaml", "test_licence", "licensed_per", 6,
         r"'rack' is not allowed"),
    ],
)
def test_each_rule_names_file_entry_field_line(fixtures, min_catalog_dir, name, entry, field,
                                               line, pattern):
    problems = problems_of(fixtures, min_catalog_dir, name)
    assert len(problems) == 1, problems
    p = problems[0]
    assert p.file.endswith(name)
    assert p.entry == entry
    assert p.field == field
    assert p.line == line
    assert re.search(pattern, p.message), p.message


def test_mapping_instead_of_list(fixtures, min_catalog_dir):
    (p,) = problems_of(fixtures, min_catalog_dir, "nics.not_a_list.yaml")
    assert "must be a YAML list of entries" in p.message


def test_malformed_yaml_names_line(fixtures, min_catalog_dir):
    (p,) = problems_of(fixtures, min_catalog_dir, "optics.malformed.yaml")
    assert p.file.endswith("optics.malformed.yaml")
    assert "malformed YAML" in p.message
    assert p.line == 4


def test_duplicate_key_in_mapping(fixtures, min_catalog_dir):
    (p,) = problems_of(fixtures, min_catalog_dir, "cdus.duplicate_key.yaml")
    assert "key 'capacity_kw' appears twice" in p.message
    assert p.line == 12


def test_all_problems_reported_together(fixtures, min_catalog_dir):
    problems = problems_of(fixtures, min_catalog_dir, "racks.three_problems.yaml")
    got = {(p.entry, p.field) for p in problems}
    assert got == {
        ("rack_typo", "it_power_max_kww"),
        ("rack_negative", "it_power_max_kw"),
        ("rack_unknown_gpu", "accelerator"),
    }


def test_problems_across_files_reported_together(fixtures, min_catalog_dir):
    with pytest.raises(InputError) as info:
        load_catalog(min_catalog_dir, extra_files={
            "racks": fixtures / BROKEN / "racks.out_of_range.yaml",
            "models": fixtures / BROKEN / "models.duplicate_id.yaml",
        })
    files = {p.file.split("/")[-1] for p in info.value.problems}
    assert files == {"racks.out_of_range.yaml", "models.duplicate_id.yaml"}


def test_missing_catalog_file(tmp_path, min_catalog_dir):
    for f in min_catalog_dir.iterdir():
        if f.name != "nics.yaml":
            (tmp_path / f.name).write_text(f.read_text())
    with pytest.raises(InputError, match=r"nics.yaml: missing nics catalog file"):
        load_catalog(tmp_path)


def test_replace_revalidates(min_catalog_dir):
    catalog = load_catalog(min_catalog_dir)
    dearer = catalog.replace("racks", "test_rack", capex_usd=360000)
    assert dearer.get("racks", "test_rack").capex_usd == 360000
    assert catalog.get("racks", "test_rack").capex_usd == 300000  # original untouched
    with pytest.raises(InputError, match=r"field 'capex_us'.*did you mean 'capex_usd'"):
        catalog.replace("racks", "test_rack", capex_us=1)
    with pytest.raises(InputError, match=r"must be > 0"):
        catalog.replace("racks", "test_rack", capex_usd=-1)
    with pytest.raises(InputError, match=r"unknown accelerator 'nope'"):
        catalog.replace("racks", "test_rack", accelerator="nope")
