"""Output of the network graph: GraphML."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx

from dcplan.facility.network.counting import NetworkResult
from dcplan.facility.network.parts import _err
from dcplan.yamlio import atomic_path


def write_graphml(result: NetworkResult, path: Path | str) -> None:
    """Write the fabric graph to ``path`` as GraphML, atomically.

    Parameters
    ----------
    result : NetworkResult
        A result built with ``keep_graph=True``.
    path : Path or str
        Target file.
    """
    if result.graph is None:
        raise _err("the network was built without its graph; rebuild with keep_graph=True")
    g = nx.MultiGraph(result.graph)
    for _, _, data in g.edges(data=True):
        for key in ("length_m", "apart"):
            if math.isinf(data.get(key, 0.0)):
                data[key] = -1.0  # GraphML has no infinity: -1 = not in the same row
        ends = data.pop("ends", None)
        if ends:
            data["end_modules"] = " | ".join(f"{k}={v}" for k, v in ends.items())
    for _, data in g.nodes(data=True):
        for k, v in list(data.items()):
            if v is None:
                del data[k]
    with atomic_path(path) as tmp:
        nx.write_graphml(g, tmp)
