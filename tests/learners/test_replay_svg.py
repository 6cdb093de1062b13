"""The server-drawn SVG charts put points where the axis arithmetic says (hand-computed pixels)."""
from learners.evaluation.charts import line_chart


def test_polyline_points_are_the_hand_computed_pixels():
    # 520x320 plot area: left 70, right 200, top 40, bottom 55 -> 250 x 225 pixels, points kept
    # 8 px inside the frame -> 234 x 209. x in [0, 10] -> px 78..312; y in [0, 1] padded by 5%
    # to [-0.05, 1.05]: py(0) = 48 + (1.05 / 1.1) * 209 = 247.5, py(1) = 48 + (0.05 / 1.1) * 209
    # = 57.5, py(0.5) = 48 + (0.55 / 1.1) * 209 = 152.5.
    svg = line_chart([("query ratio", [(10.0, 1.0), (0.0, 0.0), (5.0, 0.5)], True)],
                     title="Query ratio", x_label="items seen", y_label="queried / seen",
                     width=520, height=320, log_x=False)
    assert '<polyline points="78.0,247.5 195.0,152.5 312.0,57.5"' in svg
    assert svg.count("<circle") == 3 and svg.startswith("<svg") and svg.rstrip().endswith("</svg>")


def test_unjoined_series_and_escaped_names():
    svg = line_chart([("<b>", [(1.0, 2.0), (2.0, float("nan"))], False)], title="a&b",
                     x_label="x", y_label="y", width=520, height=320, log_x=False)
    assert "<polyline" not in svg and svg.count("<circle") == 1
    assert "&lt;b&gt;" in svg and "a&amp;b" in svg and "<b>" not in svg


def test_y_bounds_band_and_empty_chart():
    # y_min=0, y_max=1: the 5% padding of [0, 1] is cut back to the bounds, so y=0 is the
    # bottom of the inner area (48 + 209 = 257) and y=1 its top (48); the band's corners too.
    svg = line_chart([("acc", [(0.0, 0.0), (10.0, 1.0)], True)], title="t", x_label="x", y_label="y",
                     width=520, height=320, log_x=False, y_min=0.0, y_max=1.0,
                     bands=[("95%", [(0.0, 0.0, 0.5), (10.0, 0.5, 1.0)])])
    assert '<polyline points="78.0,257.0 312.0,48.0"' in svg
    assert '<polygon points="78.0,152.5 312.0,48.0 312.0,152.5 78.0,257.0"' in svg
    assert ">-0." not in svg  # no negative tick
    empty = line_chart([("acc", [], True)], title="t", x_label="x", y_label="y", bands=[("95%", [])])
    assert "no data yet" in empty and "<polyline" not in empty and "<circle" not in empty
