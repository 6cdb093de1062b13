"""A small, dependency-free SVG line chart: a metric against the query ratio (the papers' Fig. 1 style).

Written by hand (about 100 lines) rather than pulling matplotlib into the runtime for one chart;
the output is a plain SVG with axes, ticks, grid lines, a legend and a title.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.ceil(lo / step) * step
    return [start + k * step for k in range(int((hi - start) / step + 1e-9) + 1)]


#: pixels kept free inside the frame so that a point at an extreme is drawn whole
INSET = 8


def _legend(names: Sequence[tuple[str, str, bool]], x: float, y: float, below: bool) -> list[str]:
    """Legend entries ``(name, color, is_band)``: stacked from (x, y), or in one row when ``below``."""
    out = []
    for k, (name, color, band) in enumerate(names):
        if below:  # widths estimated from the text length (about 6.5 px per character at 12 px)
            lx, ly = x + sum(40 + 6.5 * len(n) for n, _, _ in names[:k]), y
        else:
            lx, ly = x, y + 18 * k
        if band:
            out.append(f'<rect x="{lx:.1f}" y="{ly - 6}" width="20" height="12" fill="{color}" '
                       f'fill-opacity="0.25"/>')
        else:
            out.append(f'<line x1="{lx:.1f}" y1="{ly}" x2="{lx + 20:.1f}" y2="{ly}" stroke="{color}" '
                       f'stroke-width="3"/>')
        out.append(f'<text x="{lx + 26:.1f}" y="{ly + 4}">{escape(name)}</text>')
    return out


def line_chart(series: Sequence[tuple[str, Sequence[tuple[float, float]], bool]], *, title: str,
               x_label: str, y_label: str, log_x: bool | None = None, width: int = 720,
               height: int = 460, bands: Sequence[tuple[str, Sequence[tuple[float, float, float]]]] = (),
               y_min: float | None = None, y_max: float | None = None, legend_below: bool = False,
               empty: str = "no data yet",
               error_bars: Sequence[Sequence[tuple[float, float, float, float]]] = ()) -> str:
    """SVG text of a chart (``viewBox`` set: it scales to the width CSS gives it).

    series: ``(name, [(x, y), ...], joined)``; points are drawn as markers and, when
    ``joined``, linked by a line in x order. bands: ``(name, [(x, low, high), ...])``, drawn as a
    shaded area (an interval) under the series. log_x: logarithmic x axis (None: when all
    x > 0 and they span more than a factor of 10). y_min / y_max: bounds the y axis never
    passes (e.g. 0 and 1 for an accuracy), None = free. Points are kept :data:`INSET` pixels
    inside the frame. With no finite point the chart says ``empty``. error_bars: per series (in
    ``series`` order), ``[(x, y, x_err, y_err), ...]`` drawn as whiskers x +- x_err and y +- y_err
    (e.g. mean +- std over runs), inside the axes like the points.
    """
    finite = [p for _, ps, _ in series for p in ps if math.isfinite(p[0]) and math.isfinite(p[1])]
    spans = [b for _, bs in bands for b in bs if all(math.isfinite(v) for v in b)]
    whiskers = [(k, e) for k, es in enumerate(error_bars) for e in es if all(math.isfinite(v) for v in e)]
    pts = finite + [(x, v) for x, lo, hi in spans for v in (lo, hi)] + [
        p for _, (x, y, dx, dy) in whiskers for p in ((x - dx, y - dy), (x + dx, y + dy))]
    left, right, top = 70, (20 if legend_below else 200), 40
    bottom = 55 + (24 if legend_below else 0)
    pw, ph = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>']
    if not pts:
        out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#f6f8fa" stroke="#ccc"/>')
        out.append(f'<text x="{left + pw / 2}" y="{top + ph / 2 + 5}" text-anchor="middle" font-size="15" '
                   f'fill="#59636e" class="no-data">{escape(empty)}</text>')
        out.append("</svg>")
        return "\n".join(out) + "\n"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    if log_x is None:
        log_x = min(xs) > 0 and max(xs) / min(xs) > 10
    tx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    x0, x1 = tx(min(xs)), tx(max(xs))
    y0, y1 = min(ys), max(ys)
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 0.5, x1 + 0.5
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 0.05, y1 + 0.05
    pad_y = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad_y, y1 + pad_y
    if y_min is not None:
        y0 = max(y0, min(y_min, min(ys)))
    if y_max is not None:
        y1 = min(y1, max(y_max, max(ys)))

    def px(v: float) -> float:
        return left + INSET + (tx(v) - x0) / (x1 - x0) * (pw - 2 * INSET)

    def py(v: float) -> float:
        return top + INSET + (1 - (v - y0) / (y1 - y0)) * (ph - 2 * INSET)

    if log_x:
        xt = [10.0 ** k for k in range(math.floor(x0), math.ceil(x1) + 1) if x0 - 1e-9 <= k <= x1 + 1e-9]
        xt = xt or [10 ** x0, 10 ** x1]
    else:
        xt = _ticks(x0, x1)
    for v in xt:
        x = px(v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{v:g}</text>')
    for v in _ticks(y0, y1):
        y = py(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    xl = escape(x_label + (" (log scale)" if log_x else ""))
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 38}" text-anchor="middle">{xl}</text>')
    out.append(f'<text transform="translate(18,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{escape(y_label)}</text>')
    names = []
    for k, (name, bs) in enumerate(bands):
        color = PALETTE[(len(series) + k) % len(PALETTE)]
        spans = sorted(b for b in bs if all(math.isfinite(v) for v in b))
        if spans:
            ring = [(x, hi) for x, _, hi in spans] + [(x, lo) for x, lo, _ in reversed(spans)]
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in ring)
            out.append(f'<polygon points="{path}" fill="{color}" fill-opacity="0.25" stroke="none" '
                       f'class="band"/>')
        names.append((name, color, True))
    for k, (x, y, dx, dy) in whiskers:
        color, cx, cy = PALETTE[k % len(PALETTE)], px(x), py(y)
        # (from, to, cap direction): the x whisker has vertical caps, the y whisker horizontal ones
        for (ax, ay), (bx, by), (capx, capy) in (((px(x - dx), cy), (px(x + dx), cy), (0, 4)),
                                                 ((cx, py(y - dy)), (cx, py(y + dy)), (4, 0))):
            out.append(f'<line x1="{ax:.1f}" y1="{ay:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="{color}" '
                       f'stroke-width="1.4" class="error-bar"/>')
            for ex, ey in ((ax, ay), (bx, by)):
                out.append(f'<line x1="{ex - capx:.1f}" y1="{ey - capy:.1f}" x2="{ex + capx:.1f}" '
                           f'y2="{ey + capy:.1f}" stroke="{color}" stroke-width="1.4"/>')
    for k, (name, ps, joined) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        good = sorted(p for p in ps if math.isfinite(p[0]) and math.isfinite(p[1]))
        if joined and len(good) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in good)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.8"/>')
        for x, y in good:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        names.insert(k, (name, color, False))
    if legend_below:
        out += _legend(names, left, height - 12, below=True)
    else:
        out += _legend(names, left + pw + 12, top + 8, below=False)
    out.append("</svg>")
    return "\n".join(out) + "\n"
