"""The server-drawn SVG charts put points where the axis arithmetic says (hand-computed pixels)."""
from learners.evaluation.charts import line_chart


def test_polyline_points_are_the_hand_computed_pixels():
    # 520x320 plot area: left 70, right 200, top 40, bottom 55 -> 250 x 225 pixels.
    # x in [0, 10] -> px 70..320; y in [0, 1] padded by 5% to [-0.05, 1.05]:
    # py(0) = 40 + (1.05 / 1.1) * 225 = 254.8, py(1) = 40 + (0.05 / 1.1) * 225 = 50.2,
    # py(0.5) = 40 + (0.55 / 1.1) * 225 = 152.5.
    svg = line_chart([("query ratio", [(10.0, 1.0), (0.0, 0.0), (5.0, 0.5)], True)],
                     title="Query ratio", x_label="items seen", y_label="queried / seen",
                     width=520, height=320, log_x=False)
    assert '<polyline points="70.0,254.8 195.0,152.5 320.0,50.2"' in svg
    assert svg.count("<circle") == 3 and svg.startswith("<svg") and svg.rstrip().endswith("</svg>")


def test_unjoined_series_and_escaped_names():
    svg = line_chart([("<b>", [(1.0, 2.0), (2.0, float("nan"))], False)], title="a&b",
                     x_label="x", y_label="y", width=520, height=320, log_x=False)
    assert "<polyline" not in svg and svg.count("<circle") == 1
    assert "&lt;b&gt;" in svg and "a&amp;b" in svg and "<b>" not in svg
