"""Small inline-SVG charts for report.html: stacked bars, horizontal bars and a heatmap, written as text.

matplotlib cost 1-2 s per report (tick and text layout, rendering) plus ~0.7 s to import; these charts are plain SVG
elements whose numbers are text (tick labels, value labels) and hover titles on every bar and cell, so a report's
figures cost milliseconds, need no import beyond the standard library, and open in any browser, offline.
Output is deterministic: coordinates are printed with one decimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Callable

W, H = 640, 360  # every chart's size in CSS pixels (the page scales it to its column)
FONT = 11  # tick and axis labels
SMALL = 10  # legends, value labels, bar names
CHAR = 0.6  # average glyph width over font size of a sans-serif face: margins are sized from it
GRID, AXIS, MUTED = "#e3e5ea", "#555", "#333"
# matplotlib's viridis at 0, 0.1, ..., 1 (interpolated linearly in between)
VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
           "#bddf26", "#fde725"]


@dataclass(frozen=True)
class Series:
    """One layer of a stacked bar chart: a value per category; hatched layers are lighter, with white stripes."""
    name: str
    values: list[float]
    color: str
    hatched: bool = False


@dataclass(frozen=True)
class Box:
    """The plot area in chart pixels, y growing downwards."""
    left: float
    top: float
    right: float
    bottom: float


def _e(x: object) -> str:
    """`x` as SVG/HTML text, quotes escaped too (names and titles land in attributes)."""
    return escape(str(x), quote=True)


def _n(x: float) -> str:
    """A coordinate with one decimal and no trailing '.0': compact and byte-stable."""
    s = f"{x:.1f}"
    return "0" if s == "-0.0" else s[:-2] if s.endswith(".0") else s


def text_width(s: str, size: float = FONT) -> float:
    """Estimated rendered width of `s`, for margins and label thinning."""
    return len(s) * size * CHAR


def _text(x: float, y: float, s: str, size: float = FONT, anchor: str = "start", extra: str = "") -> str:
    """A <text> element at (x, y) (baseline), anchored start/middle/end; `extra` adds attributes."""
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size:g}" text-anchor="{anchor}"{extra}>'
            f'{_e(s)}</text>')


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 x 10^k apart) from the first at or below `lo` to the first at or above `hi`."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    first = math.floor(lo / step + 1e-9) * step
    n = math.ceil((hi - first) / step - 1e-9)
    return [round(first + i * step, 12) for i in range(n + 1)]


def tick_format(ticks: list[float]) -> Callable[[float], str]:
    """Thousands separators, and as many decimals as the tick step needs."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = next(d for d in range(10) if abs(round(step, d) - step) <= 1e-9 * step)
    return lambda v: f"{v:,.{decimals}f}"


def _every(label_px: float, slot_px: float) -> int:
    """Label every k-th category so that labels `label_px` wide, `slot_px` apart, never overlap."""
    return max(1, math.ceil((label_px + 6) / slot_px))


def _frame(uid: str, title: str, body: list[str], height: float = H, defs: str = "") -> str:
    """The <svg> element: title on top, `body` elements, text in the page's font."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="{_e(uid)}" viewBox="0 0 {W} {_n(height)}" width="{W}" '
            f'height="{_n(height)}" role="img" aria-label="{_e(title)}" font-family="inherit" fill="#222">'
            + (f"<defs>{defs}</defs>" if defs else "") + _text(W / 2, 18, title, 14, "middle") + "".join(body)
            + "</svg>")


def _hatch(uid: str, i: int, color: str) -> str:
    """A pattern: the color at 45% opacity crossed by white diagonal stripes (matplotlib's '//' halo look)."""
    return (f'<pattern id="{uid}-h{i}" patternUnits="userSpaceOnUse" width="6" height="6" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{color}" fill-opacity="0.45"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="1.6"/></pattern>')


def _fills(uid: str, series: list[Series]) -> tuple[list[str], str]:
    """Each series' fill attribute value, and the <defs> patterns the hatched ones use."""
    fills = [f"url(#{uid}-h{i})" if s.hatched else s.color for i, s in enumerate(series)]
    return fills, "".join(_hatch(uid, i, s.color) for i, s in enumerate(series) if s.hatched)


def _legend(x: float, y: float, entries: list[tuple[str, str]], width: float) -> list[str]:
    """Swatch and name per (name, fill), one a line, from (x, y) down; a name wider than `width` is cut, its hover
    title keeps it whole."""
    out = []
    for i, (name, fill) in enumerate(entries):
        top, shown = y + i * 15, _fit(name, width - 14, SMALL)
        out.append(f'<rect x="{_n(x)}" y="{_n(top)}" width="10" height="10" fill="{fill}"/>')
        out.append(_text(x + 14, top + 9, shown, SMALL) if shown == name else
                   _text(x + 14, top + 9, shown, SMALL).replace("</text>", f"<title>{_e(name)}</title></text>"))
    return out


def _value_axis_y(box: Box, ticks: list[float], label: str) -> list[str]:
    """Horizontal grid lines, tick labels and the rotated axis label of a vertical value axis."""
    fmt, lo, hi = tick_format(ticks), ticks[0], ticks[-1]
    out = []
    for t in ticks:
        y = box.bottom - (t - lo) / (hi - lo) * (box.bottom - box.top)
        out.append(f'<line x1="{_n(box.left)}" x2="{_n(box.right)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{GRID}"/>')
        out.append(_text(box.left - 4, y + 3.5, fmt(t), anchor="end"))
    cy = (box.top + box.bottom) / 2
    out.append(_text(12, cy, label, anchor="middle", extra=f' transform="rotate(-90 12 {_n(cy)})"'))
    return out


def _value_axis_x(box: Box, ticks: list[float], label: str) -> list[str]:
    """Vertical grid lines, tick labels and the axis label of a horizontal value axis."""
    fmt, lo, hi = tick_format(ticks), ticks[0], ticks[-1]
    out = []
    for t in ticks:
        x = box.left + (t - lo) / (hi - lo) * (box.right - box.left)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(box.top)}" y2="{_n(box.bottom)}" stroke="{GRID}"/>')
        out.append(_text(x, box.bottom + 13, fmt(t), anchor="middle"))
    out.append(_text((box.left + box.right) / 2, box.bottom + 28, label, anchor="middle"))
    return out


def _spines(box: Box) -> str:
    """Left and bottom axis lines (no top/right frame, as the matplotlib figures had)."""
    return (f'<path d="M{_n(box.left)} {_n(box.top)}V{_n(box.bottom)}H{_n(box.right)}" fill="none" '
            f'stroke="{AXIS}"/>')


def stacked_bars(uid: str, title: str, categories: list[str], series: list[Series], ylabel: str,
                 fmt: Callable[[float], str], legend: bool = True, totals: bool = False) -> str:
    """Bars per category stacked from `series` (first at the bottom), each with a hover title 'category · series:
    value'; a legend on the right, and with `totals` the total above each bar."""
    fills, defs = _fills(uid, series)
    sums = [sum(s.values[i] for s in series) for i in range(len(categories))]
    ticks = nice_ticks(0.0, max(sums, default=0.0) or 1.0)
    legend_w = min(max((text_width(s.name, SMALL) for s in series), default=0) + 24, 0.4 * W) if legend else 0
    height = max(H, 40 + 15 * len(series)) if legend else H
    left = 22 + text_width(tick_format(ticks)(ticks[-1]))
    box = Box(left, 30, W - legend_w - 12, height - 24)
    slot = (box.right - box.left) / max(len(categories), 1)
    scale = (box.bottom - box.top) / ticks[-1]
    body = _value_axis_y(box, ticks, ylabel)
    size = _label_size([fmt(v) for v in sums], slot, (SMALL, 9, 8, 7))  # 0: too crowded, the hover titles have them
    for i, cat in enumerate(categories):
        x, y = box.left + slot * (i + 0.1), box.bottom
        for s, fill in zip(series, fills):
            v = s.values[i]
            if v > 0:
                h = v * scale
                y -= h
                body.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(slot * 0.8)}" height="{_n(h)}" '
                            f'fill="{fill}" stroke="#fff" stroke-width="0.6"><title>{_e(cat)} · {_e(s.name)}: '
                            f'{_e(fmt(v))}</title></rect>')
        if totals and size:
            body.append(_text(x + slot * 0.4, y - 3, fmt(sums[i]), size, "middle"))
    body += _category_labels(categories, [box.left + slot * (i + 0.5) for i in range(len(categories))],
                             slot, box.bottom + 13)
    body.append(_spines(box))
    if legend:
        body += _legend(box.right + 12, box.top, [(s.name, f) for s, f in zip(series, fills)], legend_w)
    return _frame(uid, title, body, height, defs)


def _label_size(labels: list[str], slot: float, sizes: tuple[float, ...]) -> float:
    """The largest of `sizes` at which every label fits its `slot` beside its neighbours; 0 if none does."""
    widest = max(labels, key=len, default="")
    return next((z for z in sizes if _every(text_width(widest, z), slot) == 1), 0)


def _category_labels(labels: list[str], centers: list[float], slot: float, y: float) -> list[str]:
    """Category tick labels centred under their bars: smaller when crowded, then thinned so they never overlap."""
    size = _label_size(labels, slot, (FONT, SMALL, 9, 8)) or 8
    k = _every(text_width(max(labels, key=len, default=""), size), slot)
    return [_text(c, y, s, size, "middle") for i, (s, c) in enumerate(zip(labels, centers)) if i % k == 0]


def _fit(s: str, px: float, size: float = FONT) -> str:
    """`s`, cut with an ellipsis when wider than `px` (the hover title keeps the whole name)."""
    keep = int(px / (size * CHAR))
    return s if len(s) <= keep else s[:max(keep - 1, 1)] + "…"


def hbars(uid: str, title: str, names: list[str], values: list[float], colors: list[str], xlabel: str,
          fmt: Callable[[float], str], lo: float = 0.0, ref: float | None = None) -> str:
    """One horizontal bar per name from `lo` to its value, the value printed at its end and in a hover title;
    `ref` draws a dashed reference line (e.g. 1.0 = perfect balance)."""
    ticks = nice_ticks(lo, max(values + ([ref] if ref is not None else []), default=lo + 1))
    lo, hi = ticks[0], ticks[-1]  # the axis starts at the round tick at or below the asked `lo`
    height = max(H, 74 + 18 * len(names))
    left = min(W * 0.45, max((text_width(n, SMALL) for n in names), default=0) + 10)
    box = Box(left, 30, W - 12 - max((text_width(fmt(v), SMALL) for v in values), default=0), height - 40)
    row = (box.bottom - box.top) / max(len(names), 1)
    sx = (box.right - box.left) / (hi - lo)
    body = _value_axis_x(box, ticks, xlabel)
    for i, (name, v, color) in enumerate(zip(names, values, colors)):
        bar = min(row * 0.7, 24.0)
        y, w, mid = box.top + row * (i + 0.5) - bar / 2, max(v - lo, 0.0) * sx, box.top + row * (i + 0.5) + 3.5
        body.append(f'<rect x="{_n(box.left)}" y="{_n(y)}" width="{_n(w)}" height="{_n(bar)}" fill="{color}">'
                    f'<title>{_e(name)}: {_e(fmt(v))}</title></rect>')
        body.append(_text(box.left + w + 3, mid, fmt(v), SMALL))
        body.append(_text(box.left - 5, mid, _fit(name, box.left - 10, SMALL), SMALL, "end"))
    if ref is not None:
        x = box.left + (ref - lo) * sx
        body.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(box.top)}" y2="{_n(box.bottom)}" stroke="{MUTED}" '
                    f'stroke-dasharray="4 3"/>')
    body.append(_spines(box))
    return _frame(uid, title, body, height)


def viridis(t: float) -> str:
    """matplotlib's viridis color at `t` in [0, 1], as #rrggbb."""
    t = min(max(t, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    a, b = (tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in VIRIDIS[i:i + 2])
    return "#" + "".join(f"{round(x + (y - x) * (t - i)):02x}" for x, y in zip(a, b))


def heatmap(uid: str, title: str, labels: list[str], matrix: list[list[float]], xlabel: str, ylabel: str,
            unit: str, annotate: bool) -> str:
    """A square matrix as viridis cells (row i, column j) with a colorbar; every cell has a hover title and, with
    `annotate`, its value printed inside when it fits."""
    flat = [v for r in matrix for v in r] or [0.0]
    vmin, vmax = min(flat), max(flat)
    side = H - 30 - 48
    box = Box((W - side) / 2 - 40, 30, (W - side) / 2 - 40 + side, 30 + side)
    cell = side / max(len(labels), 1)
    body = []
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            x, y, t = box.left + j * cell, box.top + i * cell, (v - vmin) / (vmax - vmin) if vmax > vmin else 0.5
            body.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(cell)}" height="{_n(cell)}" fill="{viridis(t)}">'
                        f'<title>{_e(labels[i])} → {_e(labels[j])}: {int(v):,} {_e(unit)}</title></rect>')
            size = min(10.0, cell / (max(len(f"{int(v):,}"), 1) * CHAR + 0.8))
            if annotate and size >= 6:
                color = "#000" if t > 0.6 else "#fff"  # dark text on viridis' light end
                body.append(_text(x + cell / 2, y + cell / 2 + size * 0.35, f"{int(v):,}", round(size, 1), "middle",
                                  f' fill="{color}"'))
    centers = [box.left + cell * (k + 0.5) for k in range(len(labels))]
    body += _category_labels(labels, centers, cell, box.bottom + 13)
    k = _every(FONT, cell)
    body += [_text(box.left - 4, box.top + cell * (n + 0.5) + 3.5, s, anchor="end")
             for n, s in enumerate(labels) if n % k == 0]
    body.append(_text((box.left + box.right) / 2, box.bottom + 28, xlabel, anchor="middle"))
    cy = (box.top + box.bottom) / 2
    x = box.left - 14 - max((text_width(s) for s in labels), default=0)
    body.append(_text(x, cy, ylabel, anchor="middle", extra=f' transform="rotate(-90 {_n(x)} {_n(cy)})"'))
    body += _colorbar(uid, Box(box.right + 16, box.top, box.right + 30, box.bottom), vmin, vmax, unit)
    stops = "".join(f'<stop offset="{i / (len(VIRIDIS) - 1):.2f}" stop-color="{c}"/>' for i, c in enumerate(VIRIDIS))
    return _frame(uid, title, body, H, f'<linearGradient id="{uid}-cb" x1="0" y1="1" x2="0" y2="0">{stops}'
                                       f'</linearGradient>')


def _colorbar(uid: str, box: Box, vmin: float, vmax: float, unit: str) -> list[str]:
    """The gradient bar beside a heatmap with its value ticks and rotated unit label."""
    hi = vmax if vmax > vmin else vmin + 1
    ticks = [t for t in nice_ticks(vmin, hi) if vmin <= t <= hi]
    fmt = tick_format(ticks if len(ticks) > 1 else nice_ticks(vmin, hi))
    out = [f'<rect x="{_n(box.left)}" y="{_n(box.top)}" width="{_n(box.right - box.left)}" '
           f'height="{_n(box.bottom - box.top)}" fill="url(#{uid}-cb)"/>']
    for t in ticks:
        y = box.bottom - (t - vmin) / (hi - vmin) * (box.bottom - box.top)
        out.append(f'<line x1="{_n(box.right)}" x2="{_n(box.right + 3)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{AXIS}"/>')
        out.append(_text(box.right + 5, y + 3.5, fmt(t)))
    x, cy = box.right + 12 + max((text_width(fmt(t)) for t in ticks), default=0), (box.top + box.bottom) / 2
    out.append(_text(x, cy, unit, anchor="middle", extra=f' transform="rotate(-90 {_n(x)} {_n(cy)})"'))
    return out
