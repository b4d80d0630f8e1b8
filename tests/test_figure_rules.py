"""The rules every figure of `dlbench report --figures` obeys, checked on the matplotlib
objects themselves (scales, artists, legend entries, texts, file names) of a small stored
run made here: three frameworks x 6 blocks, one of them measured on a busy machine and one
trial that failed after its first measured repeat, with per-epoch losses and telemetry
(system CPU at 100% throughout)."""

from __future__ import annotations

import statistics

import pytest

from dlbench.analysis import comparisons
from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.report import plots
from dlbench.store import Measurement, Store

CASE = {
    "runtime": "defaults",
    "dataset": "digits",
    "device": "cpu",
    "epochs": 3,
    "init": "glorot-uniform",
    "lr": 0.01,
    "momentum": 0.0,
    "optimizer": "sgd",
    "precision": "float32",
    "seed": 0,
    "steps": None,
    "threads": 2,
    "model": "mlp",
    "batch_size": 32,
}
SECONDS = {"a": 1.0, "b": 2.0, "c": 0.5}  # train time per framework; c runs beside a busy machine
BLOCKS, REPEATS = 6, 3
ENVIRONMENT = {"hostname": "lab", "cpu_model": "Test CPU", "logical_cores": 8, "memory_total_bytes": 16e9}
MACHINE = "machine: lab: Test CPU, 8 logical cores, 16 GB"


def loss(fw: str, block: int, repeat: int, epoch: int) -> float:
    return (2.0 + 0.1 * "abc".index(fw)) / (epoch + 1) + 0.01 * block + 0.001 * repeat


def make_store(
    path, *, failure: bool, batches: tuple[int, ...] = (32,), blocks: int = BLOCKS, accuracy: float = 0.9
) -> tuple[Store, int]:
    store = Store(path)
    run_id = store.create_run(
        name="rules", command="test", config_source="test", config_text="", experiment={},
        environment=ENVIRONMENT, version="0",
    )  # fmt: skip
    position = 0
    for block in range(blocks):
        for fw, seconds, batch in ((fw, s, b) for fw, s in SECONDS.items() for b in batches):
            case = {**CASE, "framework": fw, "variant": "v", "batch_size": batch}
            tid = store.add_trial(
                run_id, case_key=fw if batch == 32 else f"{fw}{batch}", block=block, position=position, case=case,
                protocol={"repeats": REPEATS, "warmup": 1},
            )  # fmt: skip
            position += 1
            store.start_trial(tid)
            failed = failure and fw == "c" and block == blocks - 1
            rows = []
            for r in range(2 if failed else REPEATS + 1):
                t = seconds * (1 + 0.03 * ((block * 7 + r) % 5))
                warm = r == 0
                rows += [
                    Measurement(r, warm, "train", "time", t * (3 if warm else 1), "s"),
                    Measurement(r, warm, "infer", "time", t / 10, "s"),
                    Measurement(r, warm, "train", "throughput", 1000 * batch / 32 / t, "samples/s"),
                    Measurement(r, warm, "infer", "throughput", 10000 / t, "samples/s"),
                    Measurement(r, warm, "accuracy", "accuracy", accuracy + 0.001 * r, "fraction"),
                    Measurement(r, warm, "train", "cpu.system_util:mean", 100.0, "%"),
                    Measurement(r, warm, "train", "cpu.process_util:mean", 150.0 + 5 * r, "%"),
                    Measurement(r, warm, "train", "cpu.others_util:mean", 40.0 if fw == "c" else 2.0 + r, "%"),
                    *(Measurement(r, warm, "train", "loss", loss(fw, block, r, e), "nats", seq=e) for e in range(3)),
                ]
            store.add_measurements(tid, rows)
            store.finish_trial(
                tid, status="failed" if failed else "ok", error="boom" if failed else None, returncode=0, wall_s=1.0,
                stderr="",
            )  # fmt: skip
    return store, run_id


def draw(tmp_path, store: Store, run_id: int, **kwargs) -> tuple[list, dict]:
    """make_figures' result and its matplotlib figures by name, laid out as saved."""
    figures: dict = {}
    original = plots._save

    def keep(fig, out, name, *args, **kw):
        made = original(fig, out, name, *args, **kw)
        figures[name] = fig  # after _save: footer and legend placed, axes formatted
        return made

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "_save", keep)
        made = plots.make_figures(store, run_id, tmp_path, **kwargs)
    return made, figures


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rules")
    store, run_id = make_store(tmp / "r.db", failure=True)
    made, figures = draw(tmp / "figs", store, run_id)
    yield store, run_id, made, figures
    store.close()


def axes_of(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def test_files_numbered_without_gaps_and_wide_enough(drawn, tmp_path):
    store, run_id, made, figures = drawn
    # No batch sizes, energy or scaling in this run: their numbers are not skipped.
    assert [f.name for f in made] == [
        "01_box_train_time", "02_box_infer_time", "03_runs_train_time", "04_relative_time", "06_accuracy_runs",
        "10_learning_curves", "08_telemetry",
    ]  # fmt: skip
    assert [f.png.name for f in made] == [
        "01_box_train_time.png", "02_box_infer_time.png", "03_runs_train_time.png", "04_relative_time.png",
        "05_accuracy_runs.png", "06_learning_curves.png", "07_telemetry.png",
    ]  # fmt: skip
    assert sorted(p.name for p in made[0].png.parent.iterdir()) == sorted(
        [f.png.name for f in made] + [f.svg.name for f in made]
    )
    from PIL import Image

    for f in made:
        with Image.open(f.png) as image:
            assert image.size[0] >= plots.PAGE_PX, (f.name, image.size)
        assert figures[f.name].get_figwidth() >= plots.MIN_WIDTH
    # A subset is numbered from 01 too.
    subset = plots.make_figures(store, run_id, tmp_path, only=("08_telemetry", "04_relative_time"), formats=("png",))
    assert [f.png.name for f in subset] == ["01_relative_time.png", "02_telemetry.png"]


def test_no_bars_on_a_log_axis(drawn):
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle

    _, _, _, figures = drawn
    logged = 0
    for name, fig in figures.items():
        for ax in axes_of(fig):
            if ax.get_yscale() == "log":
                logged += 1
                assert not [c for c in ax.collections if isinstance(c, PolyCollection)], name
                assert not [p for p in ax.patches if isinstance(p, Rectangle)], name
    assert logged  # the per-repeat figure spans 0.5-6 s: a log axis, with dots
    runs = axes_of(figures["03_runs_train_time"])[0]
    assert runs.get_yscale() == "log" and runs.collections  # scatter dots


def test_relative_time_is_a_forest_plot_of_every_comparison(drawn):
    from matplotlib.image import AxesImage

    store, run_id, made, figures = drawn
    fig = figures["04_relative_time"]
    assert not fig.findobj(AxesImage)  # no heat map, so no colour scale to outgrow
    verdicts, _ = comparisons.within_run(store.trials(run_id), store.measurements(run_id), BAND, ALPHA)
    data = {f.name: f for f in made}["04_relative_time"].data
    axes = axes_of(fig)
    assert [ax.get_title().split(":")[0] for ax in axes] == ["train time", "inference time"]
    for ax in axes:
        metric = ax.get_title().split(":")[0]
        expected = {}
        for v in (v for v in verdicts if v.metric == metric):
            c = v.comparison
            # The baseline (a:v, first by name) is the denominator wherever it takes part.
            if v.a == "a:v":
                expected[(v.b, v.a)] = (1 / c.ratio, (1 / c.ratio_ci[1], 1 / c.ratio_ci[0]))
            else:
                expected[(v.a, v.b)] = (c.ratio, c.ratio_ci)
        rows = data[metric]
        assert {(r["a"], r["b"]) for r in rows} == set(expected) and len(rows) == 3
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert len(labels) == 3  # one row per comparison
        assert ax.get_xscale() == "log"
        lines = [ln for ln in ax.get_lines()]
        assert any(list(ln.get_xdata()) == [1.0, 1.0] for ln in lines)  # the line at 1x
        lo, hi = ax.get_xlim()
        for r in rows:
            ratio, ci = expected[(r["a"], r["b"])]
            assert r["ratio"] == pytest.approx(ratio) and r["ci"] == pytest.approx(ci)
            # Its interval is drawn as a segment with the ratio's dot on it, inside the axis.
            assert any(list(ln.get_xdata()) == pytest.approx(list(ci)) for ln in lines)
            assert any(list(ln.get_xdata()) == pytest.approx([ratio]) and ln.get_marker() == "o" for ln in lines)
            assert lo < ci[0] and ci[1] < hi
        band = [p for p in ax.patches]
        assert len(band) == 1
        x0, width = band[0].get_x(), band[0].get_width()  # axvspan: x in data, y the whole axis
        assert x0 == pytest.approx(1 / (1 + BAND)) and x0 + width == pytest.approx(1 + BAND)
    b_over_a = next(r for r in data["train time"] if (r["a"], r["b"]) == ("b:v", "a:v"))
    assert b_over_a["ratio"] == pytest.approx(2.0, rel=0.1) and b_over_a["verdict"] == "slower"


def test_constant_series_not_drawn_and_axes_plain(drawn):
    _, _, made, figures = drawn
    telemetry = {f.name: f for f in made}["08_telemetry"]
    assert telemetry.data["constant"] == {"cpu.system_util:mean | train": 100.0}
    fig = figures["08_telemetry"]
    titles = [ax.get_title() for ax in axes_of(fig)]
    assert titles and not any("system CPU" in t for t in titles)
    assert "system CPU (% of all cores), training 100" in fig.get_suptitle()
    for name, fig in figures.items():
        fig.canvas.draw()
        for ax in axes_of(fig):
            for axis in (ax.xaxis, ax.yaxis):
                assert axis.get_offset_text().get_text() == "", (name, ax.get_title())
                assert not any("e-" in t.get_text() or "$" in t.get_text() for t in axis.get_ticklabels()), name


def test_legends_list_what_is_drawn_with_its_marker(drawn, tmp_path):
    _, _, _, figures = drawn
    (legend,) = figures["03_runs_train_time"].legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [
        "a:v", "b:v", "c:v", "warm-up (not in statistics)", "value of a trial that did not finish",
        "trial without values (status written)",
    ]  # fmt: skip
    handles = legend.legend_handles
    assert [h.get_marker() for h in handles] == ["o"] * 5 + ["x"]
    assert all(h.get_linestyle() == "None" for h in handles)  # dots, not lines or bars
    # Every trial finished: no entry for unfinished trials or gaps.
    store, run_id = make_store(tmp_path / "ok.db", failure=False)
    _, ok = draw(tmp_path / "figs", store, run_id, only=("03_runs_train_time",))
    store.close()
    (legend,) = ok["03_runs_train_time"].legends
    assert [t.get_text() for t in legend.get_texts()] == ["a:v", "b:v", "c:v", "warm-up (not in statistics)"]


def test_busy_cases_marked_in_every_figure(drawn):
    _, _, made, figures = drawn
    for name in ("01_box_train_time", "02_box_infer_time", "03_runs_train_time", "06_accuracy_runs"):
        ticks = [t.get_text() for ax in axes_of(figures[name]) for t in ax.get_xticklabels()]
        assert [t for t in ticks if "BUSY" in t] == ["c:v BUSY"], (name, ticks)
    ticks = [t.get_text() for ax in axes_of(figures["08_telemetry"]) for t in ax.get_xticklabels()]
    assert {t for t in ticks if "BUSY" in t} == {"c:v BUSY"}  # one model: not repeated in each label
    forest = [t.get_text() for ax in axes_of(figures["04_relative_time"]) for t in ax.get_yticklabels()]
    assert all(("BUSY" in t) == ("c:v" in t) for t in forest) and any("BUSY" in t for t in forest)
    (curves,) = axes_of(figures["10_learning_curves"])
    assert curves.get_title().endswith("BUSY: c:v")
    for f in made:
        assert "BUSY: other processes took ≥15% of the CPU" in f.footer, f.name


def test_busy_points_ringed_in_the_batch_size_figure(tmp_path):
    store, run_id = make_store(tmp_path / "b.db", failure=False, batches=(32, 64))
    made, figures = draw(tmp_path / "figs", store, run_id, only=("05_batch_size",))
    store.close()
    (figure,) = made
    assert figure.png.name == "01_batch_size.png"
    for panel in figure.data.values():
        assert {ident: line["busy"] for ident, line in panel.items()} == {"a:v": [], "b:v": [], "c:v": [32, 64]}
    fig = figures["05_batch_size"]
    for ax in axes_of(fig):
        rings = [c for c in ax.collections if len(c.get_offsets()) and not c.get_facecolor().any()]
        assert len(rings) == 1 and [x for x, _ in rings[0].get_offsets()] == [32, 64]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a:v", "b:v", "c:v", "BUSY: measured on a busy machine"]
    assert "batch 32, 64" in figure.footer


def test_footer_names_n_threads_batch_and_machine(drawn):
    _, _, made, figures = drawn
    for f in made:
        texts = [t.get_text().replace("\n", " ") for t in figures[f.name].texts]
        assert f.footer and any(t == f.footer for t in texts), (f.name, texts)
        # c's failed trial leaves it 5 finished processes; a and b have 6.
        assert f.footer.startswith("n = 5-6 finished processes per case, 3 measured repeats each")
        assert "threads 2" in f.footer and "batch 32" in f.footer and MACHINE in f.footer


def test_learning_curves(drawn):
    store, run_id, made, figures = drawn
    (ax,) = axes_of(figures["10_learning_curves"])
    assert ax.get_xlabel() == "epoch" and ax.get_ylabel() == "training loss (nats)"
    rows = store.measurements(run_id)
    trials = {t["id"]: t["status"] for t in store.trials(run_id)}
    lines = ax.get_lines()
    for fw in SECONDS:
        color = plots.PALETTE["abc".index(fw)]
        values = [
            r for r in rows
            if r["framework"] == fw and r["metric"] == "loss" and not r["warmup"] and trials[r["trial_id"]] == "ok"
        ]  # fmt: skip
        median = [statistics.median(r["value"] for r in values if r["seq"] == e) for e in range(3)]
        bold = [ln for ln in lines if ln.get_color() == color and ln.get_linewidth() == 2]
        thin = [ln for ln in lines if ln.get_color() == color and ln.get_linewidth() < 1]
        assert len(bold) == 1 and list(bold[0].get_xdata()) == [1, 2, 3]
        assert list(bold[0].get_ydata()) == pytest.approx(median)
        assert len(thin) == len({(r["trial_id"], r["repeat"]) for r in values})  # one per measured repeat
    (legend,) = figures["10_learning_curves"].legends
    assert [t.get_text() for t in legend.get_texts()] == ["a:v", "b:v", "c:v", "one measured repeat"]
    # At epoch 3 every repeat of c (blocks 0-4: 0.734-0.777) lies above every repeat of a
    # (0.6677-0.720); b overlaps both: the caption names the one pair, with its numbers.
    (figure,) = [f for f in made if f.name == "10_learning_curves"]
    assert "Curves that differ beyond their spread" in figure.caption
    assert "ends above a:v beyond their spread (epoch 3: every repeat 0.7343-0.7763 against 0.6677-0.7197" in (
        figure.caption
    )
    assert "b:v ends above" not in figure.caption and "above b:v" not in figure.caption


def test_times_say_per_what(drawn):
    _, _, made, _ = drawn
    titles = {f.name: f.title for f in made}
    assert titles["01_box_train_time"] == "Train time per case (s per 3 epochs)"
    assert titles["03_runs_train_time"] == "Train time of every repeat (s per 3 epochs)"
    # Samples per pass read off the stored throughput x time: 10000/t samples/s x t/10 s.
    assert titles["02_box_infer_time"] == "Inference time per case (ms per pass over 1,000 test samples)"


def test_one_process_per_case_gets_no_verdict_word(tmp_path):
    store, run_id = make_store(tmp_path / "one.db", failure=False, blocks=1)
    made, figures = draw(tmp_path / "figs", store, run_id, only=("04_relative_time",))
    store.close()
    rows = made[0].data["train time"]
    assert rows and {r["verdict"] for r in rows} == {plots.NO_VERDICT}
    (legend,) = figures["04_relative_time"].legends
    assert [t.get_text() for t in legend.get_texts()][0] == "no verdict (within-process 95% interval)"


def test_svg_files_do_not_depend_on_the_last_bit_of_a_clip_rectangle():
    """matplotlib names a clip path by a hash of its rectangle's floats; a layout computed
    again can move one by a last bit, and the same run's figure then differed byte for byte."""
    import io
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlbench.report.plots import _svg_bytes

    def drawn(nudge: float, raw: bool = False) -> bytes:
        with matplotlib.rc_context({"svg.hashsalt": "dlbench"}):
            fig, ax = plt.subplots()
            ax.plot([1, 2, 3], [3, 1, 2])
            left, bottom, width, height = ax.get_position().bounds
            ax.set_position((left, bottom, width + nudge, height))
            try:
                if raw:
                    buffer = io.BytesIO()
                    fig.savefig(buffer, format="svg", metadata={"Date": None})
                    return buffer.getvalue()
                return _svg_bytes(fig)
            finally:
                plt.close(fig)

    # One last bit of the axes' width: matplotlib's own file changes (its clip path's id), ours does not.
    assert drawn(0.0, raw=True) != drawn(1e-16, raw=True)
    a, b = drawn(0.0), drawn(1e-16)
    assert a == b
    assert b'clip-path="url(#clip1)"' in a and b'id="clip1"' in a
    assert not re.search(rb"url\(#p[0-9a-f]{10}\)", a)


def test_a_share_that_reaches_100_percent_ends_its_axis_there(tmp_path):
    """Accuracy of 100% (k-NN on digits reaches it) ends the axis at 100, not at a 102% tick,
    and the dots on that line are not cut in half."""
    store, run_id = make_store(tmp_path / "r.db", failure=False, accuracy=0.997)
    _, figures = draw(tmp_path / "figs", store, run_id)
    store.close()
    (fig,) = [fig for name, fig in figures.items() if name.endswith("accuracy_runs")]
    fig.canvas.draw()
    for ax in axes_of(fig):
        assert ax.get_ylim()[1] == 100
        assert max(float(t.get_text().replace("−", "-")) for t in ax.get_yticklabels() if t.get_text()) <= 100
        assert not any(c.get_clip_on() for c in ax.collections)
    # Below 100% the axis is matplotlib's own.
    (fig,) = [fig for name, fig in draw(tmp_path / "low", *make_store(tmp_path / "low.db", failure=False))[1].items()
              if name.endswith("accuracy_runs")]  # fmt: skip
    assert all(ax.get_ylim()[1] < 100 for ax in axes_of(fig))
