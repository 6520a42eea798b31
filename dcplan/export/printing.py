"""Page setup of workbook sheets, so that a workbook prints like a report.

Every sheet prints on A4 at a readable size: the orientation and the print scale are
chosen from the sheet's column widths and row heights (:func:`page_layout`) so that
the table is one page wide at no less than :data:`MIN_FONT_PT` points (the body font
times the scale), with the fewest pages; a table too wide for a landscape page at that
size is printed in blocks of columns, its identifier columns repeated on each. The
header row is repeated on every page, the print area covers what the sheet holds,
the margins are narrow, and the page header and footer carry the scenario name, the
sheet name and "Page n of N". A chart sheet holds one chart and is fitted to one page,
so no page break ever slices a chart.

The scale is stated (not "fit to width"), so what a reader gets is known before
printing and the same in every spreadsheet program.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence

from openpyxl.utils import get_column_letter
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.pagebreak import Break, RowBreak
from openpyxl.worksheet.worksheet import Worksheet

#: Margins [inch].
MARGINS = PageMargins(left=0.4, right=0.4, top=0.5, bottom=0.5, header=0.2, footer=0.2)

#: A4 paper, portrait (width, height) [inch].
A4_INCH = (8.27, 11.69)

#: Smallest printed size of the body text [pt]: the body font times the print scale.
MIN_FONT_PT = 8.0

#: Body font of the workbooks [pt] (openpyxl's default, Calibri 11).
BODY_FONT_PT = 11.0

#: Height of a row whose height is not set [pt] (Calibri 11; wider fonts take about
#: the same).
DEFAULT_ROW_PT = 15.0

#: Printed width of one character of column width at 100 % [pt]. Excel (Calibri)
#: takes 5.25 pt (7 px at 96 px per inch); LibreOffice where Calibri and its metric
#: twin Carlito are missing measures columns in DejaVu Sans digits, 7.0 pt. Pages are
#: laid out for the wider, so that they fit in both.
CHAR_PT = 7.0

#: Share of the printable width a table may take (the rest absorbs rounding of
#: column widths to whole pixels).
WIDTH_SLACK = 0.98

#: Print scale limits [percent] (Excel allows 10-400).
MAX_SCALE = 100

#: Chart sheets: one chart of this size [cm] (width, height) anchored in row 4, and the
#: print area around it: columns of :data:`CHART_COL_WIDTH` characters and rows of
#: :data:`CHART_ROW_HEIGHT` points, wide and tall enough for the chart whatever the
#: font's width; the page is fitted to one sheet of paper, so nothing is sliced.
CHART_SIZE_CM = (23.0, 13.5)
CHART_COL_WIDTH = 8.43
CHART_ROW_HEIGHT = 15.0
CHART_AREA = (16, 32)  # columns, rows

#: Advance widths of the printable ASCII characters (space to ``~``) in DejaVu Sans,
#: LibreOffice's stand-in for Calibri, as a share of its digit width (one character
#: of column width): regular and bold. Measured from DejaVuSans.ttf and
#: DejaVuSans-Bold.ttf 2.37 (advance widths at 2048 units per em; digit 1303). Calibri
#: is narrower, so text measured with these fits in Excel too.
GLYPH_WIDTHS = tuple(float(x) for x in (
    "0.50 0.63 0.72 1.32 1.00 1.49 1.23 0.43 0.61 0.61 0.79 1.32 0.50 0.57 0.50 0.53 "
    "1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 0.53 0.53 1.32 1.32 1.32 0.83 "
    "1.57 1.08 1.08 1.10 1.21 0.99 0.90 1.22 1.18 0.46 0.46 1.03 0.88 1.36 1.18 1.24 "
    "0.95 1.24 1.09 1.00 0.96 1.15 1.08 1.55 1.08 0.96 1.08 0.61 0.53 0.61 1.32 0.79 "
    "0.79 0.96 1.00 0.86 1.00 0.97 0.55 1.00 1.00 0.44 0.44 0.91 0.44 1.53 1.00 0.96 "
    "1.00 1.00 0.65 0.82 0.62 1.00 0.93 1.29 0.93 0.93 0.83 1.00 0.53 1.00 1.32").split())
GLYPH_WIDTHS_BOLD = tuple(float(x) for x in (
    "0.55 0.72 0.82 1.32 1.09 1.57 1.37 0.48 0.72 0.72 0.82 1.32 0.60 0.65 0.60 0.57 "
    "1.09 1.09 1.09 1.09 1.09 1.09 1.09 1.09 1.09 1.09 0.63 0.63 1.32 1.32 1.32 0.91 "
    "1.57 1.22 1.20 1.15 1.30 1.07 1.07 1.29 1.32 0.58 0.58 1.22 1.00 1.56 1.32 1.34 "
    "1.15 1.34 1.21 1.13 1.07 1.28 1.22 1.73 1.21 1.14 1.14 0.72 0.57 0.72 1.32 0.79 "
    "0.79 1.06 1.13 0.93 1.13 1.07 0.68 1.13 1.12 0.54 0.54 1.05 0.54 1.64 1.12 1.08 "
    "1.13 1.13 0.78 0.94 0.75 1.12 1.02 1.45 1.01 1.02 0.91 1.12 0.57 1.12 1.32").split())

#: Width of a character outside printable ASCII [digit widths]: a wide (East Asian)
#: one takes two, any other the widest Latin letter.
WIDE_GLYPH, OTHER_GLYPH = 2.0, 1.6

#: Margin on measured text [share], for kerning and rounding to pixels.
TEXT_MARGIN = 1.02


@functools.lru_cache(maxsize=1 << 16)
def text_width(text: str, bold: bool = False) -> float:
    """Printed width of ``text`` in DejaVu Sans [characters of column width]."""
    table = GLYPH_WIDTHS_BOLD if bold else GLYPH_WIDTHS
    total = 0.0
    for ch in text:
        k = ord(ch) - 32
        if 0 <= k < len(table):
            total += table[k]
        else:
            total += WIDE_GLYPH if unicodedata.east_asian_width(ch) in "WF" else OTHER_GLYPH
    return total * TEXT_MARGIN


_MAX_HF = 60  # characters of user text in a header (Excel allows 255 per section set)


def hf_text(text: str, limit: int = _MAX_HF) -> str:
    """User text for a page header/footer: ``&`` escaped (``&&``), shortened, one line."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("&", "&&")


def column_inches(width: float) -> float:
    """Printed width of a column of ``width`` characters at 100 % [inch]."""
    return width * CHAR_PT / 72.0


def printable(orientation: str) -> tuple[float, float]:
    """Width and height inside the margins of an A4 page [inch]."""
    w, h = A4_INCH if orientation == "portrait" else A4_INCH[::-1]
    return ((w - MARGINS.left - MARGINS.right) * WIDTH_SLACK,
            h - MARGINS.top - MARGINS.bottom)


def page_chars(orientation: str, scale: int | None = None) -> float:
    """Columns that fit across a page at ``scale`` (default :func:`min_scale`) [characters]."""
    return printable(orientation)[0] * 72.0 / CHAR_PT * 100.0 / (scale or min_scale())


def min_scale(font_pt: float = BODY_FONT_PT) -> int:
    """Smallest print scale [percent] at which ``font_pt`` prints at :data:`MIN_FONT_PT`."""
    return min(MAX_SCALE, math.ceil(100.0 * MIN_FONT_PT / font_pt))


def page_layout(widths: Sequence[float], heights: Sequence[float], *, repeat_cols: int = 0,
                repeat_height: float = 0.0, font_pt: float = BODY_FONT_PT
                ) -> tuple[str, int, list[int]]:
    """Orientation, scale and column breaks that print a table readably on the fewest pages.

    Parameters
    ----------
    widths : sequence of float
        Column widths [characters], first to last printed column.
    heights : sequence of float
        Row heights [pt], first to last printed row.
    repeat_cols : int
        Leading identifier columns repeated on every block of columns when the table
        is wider than a landscape page at the smallest readable scale.
    repeat_height : float
        Height of the rows repeated on every page [pt].
    font_pt : float
        Body font size [pt].

    Returns
    -------
    orientation, scale, col_breaks
        ``"portrait"`` or ``"landscape"``; the print scale [percent], no less than
        :func:`min_scale`: the largest that prints on the fewest pages; and the
        1-based columns after which a new block of columns starts (empty when the
        table is one page wide).
    """
    need = sum(column_inches(w) for w in widths) or 1.0
    tall = sum(heights) / 72.0
    lo = min_scale(font_pt)
    best = None
    for orient in ("landscape", "portrait"):
        pw, ph = printable(orient)
        top = min(MAX_SCALE, math.floor(100.0 * pw / need))
        # every scale down to the smallest readable one: a smaller scale may save pages
        for scale in range(top, lo - 1, -1):
            per_page = ph * 100.0 / scale - repeat_height / 72.0
            pages = max(1, math.ceil(tall / max(per_page, 0.5)))
            key = (pages, -scale)
            if best is None or key < best[0]:
                best = (key, orient, scale)
    if best is not None:
        return best[1], best[2], []
    # Too wide for a landscape page at the smallest readable size: blocks of columns,
    # each with the identifier columns that fit in :data:`REPEAT_SHARE` of the page.
    pw = printable("landscape")[0] * 100.0 / lo
    repeat_cols = repeated_cols(widths, repeat_cols)
    ids = sum(column_inches(w) for w in widths[:repeat_cols])
    breaks: list[int] = []
    used = 0.0
    for j, w in enumerate(widths, start=1):
        inch = column_inches(w)
        if used and used + inch > pw:
            breaks.append(j - 1)
            used = ids
        used += inch
    return "landscape", lo, breaks


#: Most of a landscape page that repeated identifier columns may take [share].
REPEAT_SHARE = 0.6


def row_breaks(heights: Sequence[float], page_pt: float, repeat_pt: float = 0.0) -> list[int]:
    """Rows after which a new page starts, filling each page from the top.

    LibreOffice's own pagination can disagree with its rendering near a page's end: a
    table whose last row just fits was paginated one page of rows longer than it
    printed, so every block of columns got a blank page (the minimal plan's Bill of
    materials, 2026-12-05). Breaks set by the writer leave it nothing to decide.

    Parameters
    ----------
    heights : sequence of float
        Printed row heights [pt], first to last printed row (0 for a hidden row).
    page_pt : float
        Height a page holds at the print scale [pt of the sheet].
    repeat_pt : float
        Height of the rows repeated at the top of every page after the first [pt].

    Returns
    -------
    list of int
        1-based rows after which a page ends (empty when the rows fit on one page).
    """
    breaks: list[int] = []
    used = 0.0
    for r, h in enumerate(heights, start=1):
        if used > 0.0 and used + h > page_pt:
            breaks.append(r - 1)
            used = repeat_pt
        used += h
    return breaks


def repeated_cols(widths: Sequence[float], id_cols: int) -> int:
    """Leading identifier columns repeated on each block of a wide table.

    The most of the first ``id_cols`` columns that take no more than
    :data:`REPEAT_SHARE` of a landscape page at the smallest readable scale.
    """
    room = printable("landscape")[0] * 100.0 / min_scale() * REPEAT_SHARE
    n, used = 0, 0.0
    for w in widths[:id_cols]:
        used += column_inches(w)
        if used > room:
            break
        n += 1
    return n


def printed_width(ws: Worksheet, col: int) -> float:
    """Width of column ``col`` (1-based) as printed [characters]: 0 when hidden."""
    dim = ws.column_dimensions[get_column_letter(col)]
    return 0.0 if dim.hidden else (dim.width or 8.43)


def setup_page(ws: Worksheet, title: str, *, repeat_rows: str | None = None,
               last_col: int | None = None, last_row: int | None = None,
               one_page: bool = False, repeat_cols: int = 0) -> int:
    """Orientation and scale (readable, fewest pages), print area, margins, header, footer.

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
    repeat_cols : int
        Leading columns repeated on every page when the table prints in blocks of
        columns (see :func:`page_layout`).

    Returns
    -------
    int
        Columns on the first printed page (all of them unless the table prints in
        blocks of columns).
    """
    ps = ws.page_setup
    ps.paperSize = ws.PAPERSIZE_A4
    ws.page_margins = MARGINS
    cols = last_col or max(ws.max_column, 1)
    rows = last_row or max(ws.max_row, 1)
    first = cols
    if one_page:
        ps.orientation = "landscape"
        ws.sheet_properties.pageSetUpPr.fitToPage = True
        ps.fitToWidth = 1
        ps.fitToHeight = 1
    else:
        widths = [printed_width(ws, j) for j in range(1, cols + 1)]
        heights = [0.0 if ws.row_dimensions[r].hidden else
                   (ws.row_dimensions[r].height or DEFAULT_ROW_PT) for r in range(1, rows + 1)]
        rep = 0.0
        if repeat_rows:
            a, b = (int(x) for x in repeat_rows.replace("$", "").split(":"))
            rep = sum(heights[a - 1:b])
        orient, scale, breaks = page_layout(widths, heights, repeat_cols=repeat_cols,
                                            repeat_height=rep)
        ps.orientation = orient
        ws.sheet_properties.pageSetUpPr.fitToPage = False
        ps.scale = scale
        ws.row_breaks = RowBreak()
        for r in row_breaks(heights, printable(orient)[1] * 72.0 * 100.0 / scale, rep):
            ws.row_breaks.append(Break(id=r))
        rep_cols = repeated_cols(widths, repeat_cols)
        if breaks and rep_cols:
            ws.print_title_cols = f"A:{get_column_letter(rep_cols)}"
        first = breaks[0] if breaks else cols
        if breaks:  # the blocks of the same rows on facing pages
            ps.pageOrder = "overThenDown"
    if repeat_rows:
        ws.print_title_rows = repeat_rows
    ws.print_area = f"A1:{get_column_letter(cols)}{rows}"
    ws.oddHeader.left.text = hf_text(title)
    ws.oddHeader.left.size = 8
    ws.oddHeader.right.text = "&A"
    ws.oddHeader.right.size = 8
    ws.oddFooter.left.text = "dcplan"
    ws.oddFooter.left.size = 8
    ws.oddFooter.right.text = "Page &P of &N"
    ws.oddFooter.right.size = 8
    return first


def chart_page(ws: Worksheet, title: str) -> None:
    """Page setup of a chart sheet: fixed grid around the chart, one printed page.

    Rows 1-3 (title, caption) keep a height already set (a caption wrapped over the
    grid's width is taller than one line), so the caption prints inside the page.
    """
    cols, rows = CHART_AREA
    for j in range(1, cols + 1):
        ws.column_dimensions[get_column_letter(j)].width = CHART_COL_WIDTH
    for r in range(1, rows + 1):
        if r > 3 or not ws.row_dimensions[r].height:
            ws.row_dimensions[r].height = CHART_ROW_HEIGHT
    setup_page(ws, title, last_col=cols, last_row=rows, one_page=True)


def effective_font_pt(ws: Worksheet, font_pt: float = BODY_FONT_PT) -> float:
    """Printed size of the body text of ``ws`` [pt]: the font times the print scale.

    A sheet fitted to a page (a chart sheet) counts at 100 %: its scale is up to the
    spreadsheet program, and it holds one chart and a caption.
    """
    if ws.sheet_properties.pageSetUpPr is not None and ws.sheet_properties.pageSetUpPr.fitToPage:
        return font_pt
    return font_pt * (ws.page_setup.scale or 100) / 100.0
