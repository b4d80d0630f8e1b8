"""Figures fit for a paper: readable at the size shown, nothing cut, no internal key,
a log axis where values span more than 10x, and no box for fewer than 5 values."""

from __future__ import annotations

import re

import pytest

from dlbench.report import plots
from dlbench.store import Measurement, Store

CASE = {
    "dataset": "digits",
    "device": "cpu",
    "epochs": 1,
    "init": "glorot-uniform",
    "lr": 0.01,
    "momentum": 0.0,
    "optimizer": "sgd",
    "precision": "float32",
    "seed": 0,
    "steps": None,
    "threads": 1,
    "model": "mlp",
    "batch_size": 32,
}


def _store(path, cases: dict[str, tuple[float, int]]):
    """One ok trial per (framework: (train time, measured repeats)), with telemetry."""
    store = Store(path)
    run_id = store.create_run(
        name="paper", command="test", config_source="test", config_text="", experiment={}, environment={}, version="0"
    )
    for position, (fw, (seconds, n)) in enumerate(cases.items()):
        tid = store.add_trial(
            run_id,
            case_key=fw,
            block=0,
            position=position,
            case={**CASE, "framework": fw, "variant": "v"},
            protocol={"repeats": n, "warmup": 1},
        )
        store.start_trial(tid)
        rows = []
        for r in range(n + 1):
            t = seconds * (1 + 0.02 * r)
            rows += [
                Measurement(r, r == 0, "train", "time", t, "s"),
                Measurement(r, r == 0, "infer", "time", t / 10, "s"),
                Measurement(r, r == 0, "accuracy", "accuracy", 0.9, "fraction"),
                Measurement(r, r == 0, "train", "cpu.process_util:mean", 95.0 + r, "%"),
                Measurement(r, r == 0, "train", "cpu.others_util:mean", 3.0 + r, "%"),
            ]
        store.add_measurements(tid, rows)
        store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    return store, run_id


@pytest.fixture
def drawn(tmp_path, monkeypatch):
    """make_figures' matplotlib figures by name, kept as _save receives them."""
    figures: dict[str, object] = {}
    original = plots._save

    def keep(fig, out, name, *args, **kwargs):
        fig.canvas.draw()  # lay out as saved, so extents are final
        figures[name] = fig
        return original(fig, out, name, *args, **kwargs)

    monkeypatch.setattr(plots, "_save", keep)

    def make(cases):
        store, run_id = _store(tmp_path / "p.db", cases)
        made = plots.make_figures(store, run_id, tmp_path / "figs")
        return made, figures

    return make


def _texts(fig):
    return [
        t
        for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize"))
        if t.get_text().strip() and t.get_visible()
    ]


def test_text_size_legends_resolution_and_words(drawn):
    made, figures = drawn({"fast": (0.015, 6), "slow": (7.0, 6), "mid": (1.0, 3)})
    assert figures
    internal = re.compile(r"cpu\.|:mean|:max|_util|process_util")
    for name, fig in figures.items():
        for text in _texts(fig):
            assert text.get_fontsize() >= plots.MIN_FONT, (name, text.get_text(), text.get_fontsize())
            assert not internal.search(text.get_text()), (name, text.get_text())
        box = fig.bbox
        renderer = fig.canvas.get_renderer()
        for legend in fig.legends:
            extent = legend.get_window_extent(renderer)
            assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, (name, extent, box)
    for f in made:
        from PIL import Image

        with Image.open(f.png) as image:
            width_px = image.size[0]
        assert width_px / figures[f.name].get_figwidth() >= plots.DPI - 1, f.name


def test_log_axis_when_a_panel_spans_more_than_ten_times(drawn):
    _, figures = drawn({"fast": (0.015, 6), "slow": (7.0, 6)})
    axes = [ax for ax in figures["01_box_train_time"].axes if ax.get_visible()]
    assert [ax.get_yscale() for ax in axes] == ["log"] and "log scale" in axes[0].get_title()


def test_linear_axis_when_values_are_close(tmp_path, drawn):
    _, figures = drawn({"a": (1.0, 6), "b": (1.5, 6)})
    axes = [ax for ax in figures["01_box_train_time"].axes if ax.get_visible()]
    assert [ax.get_yscale() for ax in axes] == ["linear"]


def test_fewer_than_five_values_get_dots_and_no_box(drawn):
    _, figures = drawn({"three": (1.0, 3), "six": (1.2, 6)})
    ax = next(ax for ax in figures["01_box_train_time"].axes if ax.get_visible())
    boxes = [p for p in ax.patches if type(p).__name__ == "PathPatch"]
    assert len(boxes) == 1  # the 6-value case only
    dots = sum(len(c.get_offsets()) for c in ax.collections if type(c).__name__ == "PathCollection")
    assert dots == 3 + 6  # every value is a dot
