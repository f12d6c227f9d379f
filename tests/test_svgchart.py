"""graphshard.validate.svgchart: ticks, colors, and charts that stay readable with many partitions or odd data."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from graphshard.validate.svgchart import (
    Series,
    hbars,
    heatmap,
    nice_ticks,
    stacked_bars,
    text_width,
    tick_format,
    viridis,
)

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("lo, hi, expected", [
    (0, 57_000, [0, 20_000, 40_000, 60_000]),
    (0, 75_974, [0, 20_000, 40_000, 60_000, 80_000]),
    (0, 0.25, [0, 0.05, 0.1, 0.15, 0.2, 0.25]),
    (0.9, 1.105, [0.9, 0.95, 1.0, 1.05, 1.1, 1.15]),
    (0, 12.3, [0, 2.5, 5, 7.5, 10, 12.5]),
    (5, 5, [5, 6, 7, 8, 9, 10]),
])
def test_nice_ticks_cover_the_range_in_round_steps(lo, hi, expected):
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_tick_format_uses_the_decimals_the_step_needs():
    assert [tick_format([0, 2.5])(v) for v in (0, 7.5)] == ["0.0", "7.5"]
    assert [tick_format([0, 0.25])(v) for v in (0, 0.5)] == ["0.00", "0.50"]
    assert tick_format([0, 10_000])(60_000) == "60,000"


def test_viridis_matches_matplotlib_at_both_ends_and_clamps():
    assert (viridis(0), viridis(1), viridis(-3), viridis(7)) == ("#440154", "#fde725", "#440154", "#fde725")
    assert viridis(0.05) == "#461264"  # halfway between the first two stops


def labels(svg: str, pattern: str) -> list[tuple[float, str, float]]:
    """(x, text, font size) of every text element matching `pattern`."""
    root = ET.fromstring(svg)
    return [(float(t.get("x")), t.text, float(t.get("font-size"))) for t in root.iter(f"{SVG}text")
            if re.fullmatch(pattern, t.text)]


@pytest.mark.parametrize("k", [4, 16, 64, 256])
def test_partition_labels_never_overlap(k):
    cats = [f"p{p}" for p in range(k)]
    svg = stacked_bars("t", "title", cats, [Series("a", [90 + p / 7 for p in range(k)], "#123456")], "y",
                       lambda v: f"{v:.1f}%", legend=False, totals=True)
    shown = labels(svg, r"p\d+")
    assert shown[0][1] == "p0" and len(shown) >= min(k, 8)
    assert len(shown) == k or shown[0][2] == 8  # shrunk to the smallest size before any label is dropped
    totals = labels(svg, r"[\d.]+%")
    assert len(totals) in (0, k) and (k < 64 or not totals)  # all the bar totals, or none when they cannot fit
    for row in (shown, totals):
        for (x0, s0, z0), (x1, s1, z1) in zip(row, row[1:]):
            assert x1 - x0 >= (text_width(s0, z0) + text_width(s1, z1)) / 2


def test_heatmap_of_equal_cells_and_many_partitions():
    svg = heatmap("h", "t", ["p0", "p1"], [[5, 5], [5, 5]], "x", "y", "edges", annotate=True)
    root = ET.fromstring(svg)
    assert [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None] == \
        ["p0 → p0: 5 edges", "p0 → p1: 5 edges", "p1 → p0: 5 edges", "p1 → p1: 5 edges"]
    big = heatmap("h", "t", [f"p{p}" for p in range(64)], [[p * q for q in range(64)] for p in range(64)], "x", "y",
                  "edges", annotate=False)
    assert "4,032" not in [t.text for t in ET.fromstring(big).iter(f"{SVG}text")]  # no cell text when annotate=False


def test_hbars_cut_long_names_but_keep_them_in_the_hover_title():
    name = "edges: " + "very_long_type:" * 12
    svg = hbars("b", "t", [name, "short"], [1.2, 0.95], ["#111", "#222"], "x", lambda v: f"{v:.3f}", lo=0.9, ref=1.0)
    root = ET.fromstring(svg)
    shown = [t.text for t in root.iter(f"{SVG}text")]
    assert "short" in shown and "1.200" in shown and "0.950" in shown and name not in shown
    assert any(s.endswith("…") and name.startswith(s[:-1]) for s in shown)
    assert f"{name}: 1.200" in [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect")]


def test_charts_escape_names_and_are_byte_stable():
    series = [Series("<a&b>", [1.0, 0.0], "#111", hatched=True), Series("c", [0.0, 0.0], "#222")]
    one = stacked_bars("s", "t <x>", ["p0", "p1"], series, "y", str)
    assert one == stacked_bars("s", "t <x>", ["p0", "p1"], series, "y", str)
    root = ET.fromstring(one)
    assert "<a&b>" in [t.text for t in root.iter(f"{SVG}text")] and root.get("aria-label") == "t <x>"
    empty = stacked_bars("z", "t", ["p0"], [Series("a", [0.0], "#111")], "y", str)
    assert "<title>" not in empty and "NaN" not in empty  # zero values draw no bar; an all-zero axis still scales


def test_long_legend_names_are_cut_to_keep_the_plot_wide():
    name = "a_very_long_source_type:rev_of_a_very_long_relation_name:a_very_long_destination_type"
    svg = stacked_bars("l", "t", ["p0", "p1"], [Series(name, [1.0, 2.0], "#111"), Series("b", [1.0, 1.0], "#222")],
                       "y", str)
    root = ET.fromstring(svg)
    legend = [t for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("a_very")]
    assert len(legend) == 1 and legend[0].text.endswith("…") and legend[0].find(f"{SVG}title").text == name
    assert "b" in [t.text for t in root.iter(f"{SVG}text")]
    assert float(legend[0].get("x")) + text_width(legend[0].text, 10) <= 640
