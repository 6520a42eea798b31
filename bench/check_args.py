"""What the model-check scripts of bench/ share: their two options and the JSON they write.

``rack_scale_check.py``, ``trtllm_b200_check.py`` and ``server_offline_search.py`` each
check the model against published results at a calibration of the user's choice and can
write what they printed as JSON.
"""

from __future__ import annotations

import argparse
import json


def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with ``--calibration`` and ``--json``, described by ``doc``'s
    first line."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--calibration", default=None,
                    help="calibration file, or 'none' (default: the shipped fit)")
    ap.add_argument("--json", default=None, help="also write the results here")
    return ap


def write_json(path: str | None, res) -> None:
    """Write ``res`` as indented JSON to ``path`` (nothing when None)."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
