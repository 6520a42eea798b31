"""Hand-over outputs of a plan: Excel workbooks, PNG charts, HTML reports, comparisons.

The exporters are thin writers over :class:`~dcplan.planner.PlanResult` tables: they
format and label what the planner computed and add totals (as live Excel formulas in
workbooks); they do not recompute plan figures.

Python API::

    from dcplan.planner import solve_case
    from dcplan.export import write_workbook, write_plan_charts
    result = solve_case("examples/minimal.yaml")  # result.case: what it was solved from
    write_workbook(result, "out/minimal.xlsx")
    write_plan_charts(result, "out/charts")
    write_html(result, "out/minimal.html")

See ``docs/outputs.md``.
"""

from __future__ import annotations

__all__ = ["compare_results", "export_plan", "write_compare_html", "write_comparison_charts",
           "write_comparison_workbook", "write_csv", "write_html", "write_plan_charts",
           "write_workbook"]


def __getattr__(name: str):
    # Import the heavy writers (openpyxl, matplotlib) only when used.
    if name in ("write_workbook", "export_plan"):
        from dcplan.export import excel

        return getattr(excel, name)
    if name in ("write_plan_charts", "write_comparison_charts"):
        from dcplan.export import charts

        return getattr(charts, name)
    if name in ("compare_results", "write_comparison_workbook"):
        from dcplan.export import compare

        return getattr(compare, name)
    if name in ("write_html", "write_compare_html"):
        from dcplan.export import html

        return getattr(html, name)
    if name == "write_csv":
        from dcplan.tableio import write_csv

        return write_csv
    raise AttributeError(name)
