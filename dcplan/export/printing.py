"""Page setup of workbook sheets, so that a workbook prints like a report.

Every sheet: landscape A4, fitted to one page wide (as many pages tall as needed),
the header row repeated on every page, a print area over what the sheet holds,
narrow margins, and a page header and footer with the scenario name, the sheet name
and "Page n of N". A chart sheet holds one chart and is fitted to one page, so no
page break ever slices a chart (manual breaks would not do: Excel ignores them on a
sheet fitted to a page width).
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.worksheet import Worksheet

#: Margins [inch].
MARGINS = PageMargins(left=0.4, right=0.4, top=0.7, bottom=0.7, header=0.3, footer=0.3)

#: Chart sheets: one chart of this size [cm] (width, height) anchored in row 4, and the
#: print area around it: columns of :data:`CHART_COL_WIDTH` characters and rows of
#: :data:`CHART_ROW_HEIGHT` points, wide and tall enough for the chart whatever the
#: font's width; the page is fitted to one sheet of paper, so nothing is sliced.
CHART_SIZE_CM = (23.0, 13.5)
CHART_COL_WIDTH = 8.43
CHART_ROW_HEIGHT = 15.0
CHART_AREA = (16, 32)  # columns, rows

_MAX_HF = 60  # characters of user text in a header (Excel allows 255 per section set)


def hf_text(text: str, limit: int = _MAX_HF) -> str:
    """User text for a page header/footer: ``&`` escaped (``&&``), shortened, one line."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("&", "&&")


def setup_page(ws: Worksheet, title: str, *, repeat_rows: str | None = None,
               last_col: int | None = None, last_row: int | None = None,
               one_page: bool = False) -> None:
    """Landscape, fit to one page wide, print area, margins, header and footer.

    Parameters
    ----------
    ws : Worksheet
    title : str
        Shown at the left of the page header (e.g. ``"dcplan plan: minimal"``);
        user text is escaped.
    repeat_rows : str, optional
        Rows repeated at the top of every page, e.g. ``"3:3"``.
    last_col, last_row : int, optional
        Print area ``A1:<last_col><last_row>`` (default: the sheet's used range).
    one_page : bool
        Fit to one page wide and one page tall (chart sheets).
    """
    ps = ws.page_setup
    ps.orientation = "landscape"
    ps.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ps.fitToWidth = 1
    ps.fitToHeight = 1 if one_page else 0
    ws.page_margins = MARGINS
    if repeat_rows:
        ws.print_title_rows = repeat_rows
    cols = last_col or max(ws.max_column, 1)
    rows = last_row or max(ws.max_row, 1)
    ws.print_area = f"A1:{get_column_letter(cols)}{rows}"
    ws.oddHeader.left.text = hf_text(title)
    ws.oddHeader.left.size = 8
    ws.oddHeader.right.text = "&A"
    ws.oddHeader.right.size = 8
    ws.oddFooter.left.text = "dcplan"
    ws.oddFooter.left.size = 8
    ws.oddFooter.right.text = "Page &P of &N"
    ws.oddFooter.right.size = 8


def chart_page(ws: Worksheet, title: str) -> None:
    """Page setup of a chart sheet: fixed grid around the chart, one printed page."""
    cols, rows = CHART_AREA
    for j in range(1, cols + 1):
        ws.column_dimensions[get_column_letter(j)].width = CHART_COL_WIDTH
    for r in range(1, rows + 1):
        ws.row_dimensions[r].height = CHART_ROW_HEIGHT
    setup_page(ws, title, last_col=cols, last_row=rows, one_page=True)
