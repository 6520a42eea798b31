"""Input errors that name the file, entry, field and fix, collected all at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One problem found in user input.

    Parameters
    ----------
    file : str
        File the problem is in (as the user named it, or relative to the catalog dir).
    message : str
        What is wrong and what to do about it.
    entry : str, optional
        Entry id (or row label) the problem belongs to.
    field : str, optional
        Field (or column) name.
    line : int, optional
        1-based line number in the file, where known.
    """

    file: str
    message: str
    entry: str | None = None
    field: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        parts = [where]
        if self.entry is not None:
            parts.append(f"entry '{self.entry}'")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts) + f": {self.message}"


class InputError(ValueError):
    """Bad user input; carries every :class:`Problem` found, not just the first.

    Parameters
    ----------
    problems : list of Problem
        All problems found.
    """

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(file="<input>", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        lines = [f"{len(self.problems)} problems found:"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def display_path(path: Path | str) -> str:
    """Return a short, readable form of ``path`` (relative to the cwd when inside it)."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
