"""How long a report takes over 100,000 stored measurements.

Writes a synthetic run into a fresh database (3 frameworks x 4 models x 3 batch
sizes, 10 interleaved blocks, 5 measured + 1 warm-up repeats, every metric a
real run stores, latency calls included) and times `dlbench report` in each
format, in this process, end to end from the database, three times each (the
median counts: the first call also pays the imports). Target: < 5 s.

    .venv/bin/python benchmarks/report_scale.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlbench.report.formats import render  # noqa: E402
from dlbench.store import Measurement, Store  # noqa: E402

FRAMEWORKS = (("torch", "eager", 1.0), ("tensorflow", "graph", 1.1), ("jax", "jit", 0.9))
MODELS = ("mlp", "lenet5", "cnn", "resnet18")
BATCHES = (32, 64, 128)


def populate(store: Store, blocks: int = 10, repeats: int = 6, latency: int = 50) -> int:
    rng = np.random.default_rng(0)
    run_id = store.create_run(name="scale", command="synthetic", config_source="-", config_text="",
                              experiment={}, environment={"cpu_model": "synthetic"}, version="0")
    n = 0
    for block in range(blocks):
        position = 0
        for fw, variant, speed in FRAMEWORKS:
            for mi, model in enumerate(MODELS):
                for batch in BATCHES:
                    case = {"framework": fw, "variant": variant, "model": model, "dataset": "synthetic",
                            "batch_size": batch, "init": "glorot-uniform", "optimizer": "sgd", "lr": 0.01,
                            "momentum": 0.0, "epochs": 1, "steps": None, "device": "cpu", "threads": 2,
                            "precision": "float32", "seed": 0, "train_samples": 0, "test_samples": 0,
                            "synthetic": None}
                    key = json.dumps(case, sort_keys=True)
                    tid = store.add_trial(run_id, case_key=str(abs(hash(key)) % 10**12), block=block,
                                          position=position, case=case, protocol={"repeats": 5, "warmup": 1})
                    position += 1
                    rows = []
                    base = speed * (1 + mi) * 64 / batch
                    for r in range(repeats):
                        warm = r == 0
                        train_s, infer_s = base * rng.lognormal(0, 0.05), base / 10 * rng.lognormal(0, 0.05)
                        rows += [Measurement(r, warm, "train", "time", train_s, "s"),
                                 Measurement(r, warm, "train", "throughput", 60000 / train_s, "samples/s"),
                                 Measurement(r, warm, "infer", "time", infer_s, "s"),
                                 Measurement(r, warm, "infer", "throughput", 10000 / infer_s, "samples/s"),
                                 Measurement(r, warm, "accuracy", "accuracy", 0.9 + rng.normal(0, 0.01), "fraction"),
                                 Measurement(r, warm, "train", "cpu.process_util:mean", 180 + rng.normal(0, 5), "%"),
                                 Measurement(r, warm, "train", "memory.peak_rss", 5e8, "bytes")]
                        rows += [Measurement(r, warm, f"latency_b{batch}", "time", base / 300 * rng.lognormal(0, .1),
                                             "s", i) for i in range(latency)]
                    store.start_trial(tid)
                    n += store.add_measurements(tid, rows)
                    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    return n


def main(repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with Store(Path(tmp) / "scale.db") as store:
            t0 = time.perf_counter()
            n = populate(store)
            print(f"wrote {n:,} measurements in {time.perf_counter() - t0:.1f} s")
            worst = 0.0
            for fmt in ("console", "markdown", "latex", "csv", "html"):
                times = []
                for _ in range(repeats):  # the median of a few: this VM's speed drifts by ±20%
                    t0 = time.perf_counter()
                    text = render(store, 1, fmt) if fmt != "console" else _console(store)
                    times.append(time.perf_counter() - t0)
                median = statistics.median(times)
                worst = max(worst, median)
                print(f"report --format {fmt:8s}: median {median:5.2f} s of {', '.join(f'{t:.2f}' for t in times)}"
                      f" ({len(text):,} characters)", flush=True)
    print(f"slowest format (median) {worst:.2f} s; target < 5 s: {'PASS' if worst < 5 else 'FAIL'}")
    sys.exit(0 if worst < 5 else 1)


def _console(store: Store) -> str:
    """The console report, rendered into a string as `dlbench report` prints it."""
    import io

    from rich.console import Console

    from dlbench.report.console import print_report
    from dlbench.report.model import build_report

    buffer = io.StringIO()
    print_report(Console(file=buffer, width=150, markup=False), build_report(store, 1, hypotheses=False))
    return buffer.getvalue()


if __name__ == "__main__":
    main()
