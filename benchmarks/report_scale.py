"""How long reading a big store takes: reports, the Python API and export, at N measurements.

Writes a synthetic run into a fresh database (3 frameworks x 4 models x 3 batch
sizes, interleaved blocks, 5 measured + 1 warm-up repeats, every metric a real run
stores, 50 latency calls per repeat: 12,312 rows a block) with as many blocks as
--measurements asks for (10^5: 8 blocks, 10^6: 81), then times what a user runs, each
in a fresh process (interpreter start and imports included), --repeats times; the
median counts. Beside each it times a fixed reference kernel: this VM's speed drifts
by +-25% over minutes, and time / kernel tells a slower command from a slower machine.

    .venv/bin/python benchmarks/report_scale.py [--measurements 1000000] [--repeats 3]
        [--formats console,html] [--db postgresql://USER@HOST:PORT/DB] [--keep FILE]

Targets at 10^6 measurements (issue 36): console report <= 3 s, HTML <= 8 s,
dlbench.load(db).measurements() <= 3 s, export --format parquet <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlbench.store import Measurement, Store  # noqa: E402

FRAMEWORKS = (("torch", "eager", 1.0), ("tensorflow", "graph", 1.1), ("jax", "jit", 0.9))
MODELS = ("mlp", "lenet5", "cnn", "resnet18")
BATCHES = (32, 64, 128)


def populate(store: Store, blocks: int = 10, repeats: int = 6, latency: int = 50) -> int:
    rng = np.random.default_rng(0)
    run_id = store.create_run(
        name="scale",
        command="synthetic",
        config_source="-",
        config_text="",
        experiment={},
        environment={"cpu_model": "synthetic"},
        version="0",
    )
    n = 0
    for block in range(blocks):
        position = 0
        for fw, variant, speed in FRAMEWORKS:
            for mi, model in enumerate(MODELS):
                for batch in BATCHES:
                    case = {
                        "framework": fw,
                        "variant": variant,
                        "model": model,
                        "dataset": "synthetic",
                        "batch_size": batch,
                        "init": "glorot-uniform",
                        "optimizer": "sgd",
                        "lr": 0.01,
                        "momentum": 0.0,
                        "epochs": 1,
                        "steps": None,
                        "device": "cpu",
                        "threads": 2,
                        "precision": "float32",
                        "seed": 0,
                        "train_samples": 0,
                        "test_samples": 0,
                        "synthetic": None,
                    }
                    key = json.dumps(case, sort_keys=True)
                    tid = store.add_trial(
                        run_id,
                        case_key=str(abs(hash(key)) % 10**12),
                        block=block,
                        position=position,
                        case=case,
                        protocol={"repeats": 5, "warmup": 1},
                    )
                    position += 1
                    rows = []
                    base = speed * (1 + mi) * 64 / batch
                    for r in range(repeats):
                        warm = r == 0
                        train_s, infer_s = base * rng.lognormal(0, 0.05), base / 10 * rng.lognormal(0, 0.05)
                        rows += [
                            Measurement(r, warm, "train", "time", train_s, "s"),
                            Measurement(r, warm, "train", "throughput", 60000 / train_s, "samples/s"),
                            Measurement(r, warm, "infer", "time", infer_s, "s"),
                            Measurement(r, warm, "infer", "throughput", 10000 / infer_s, "samples/s"),
                            Measurement(r, warm, "accuracy", "accuracy", 0.9 + rng.normal(0, 0.01), "fraction"),
                            Measurement(r, warm, "train", "cpu.process_util:mean", 180 + rng.normal(0, 5), "%"),
                            Measurement(r, warm, "train", "memory.peak_rss", 5e8, "bytes"),
                        ]
                        rows += [
                            Measurement(
                                r, warm, f"latency_b{batch}", "time", base / 300 * rng.lognormal(0, 0.1), "s", i
                            )
                            for i in range(latency)
                        ]
                    store.start_trial(tid)
                    n += store.add_measurements(tid, rows)
                    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    return n


def reference_kernel() -> float:
    """Seconds for a fixed mix of Python object work and numpy, timed beside each report:
    this VM's speed drifts by ±25% over minutes, and report time / kernel time tells a
    slower report from a slower machine."""
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    rows = [{"trial": i % 360, "value": float(v)} for i, v in enumerate(rng.random(200_000))]
    groups: dict[int, list[float]] = {}
    for r in rows:
        groups.setdefault(int(r["trial"]), []).append(r["value"])
    _ = [float(np.median(v)) for v in groups.values()]
    _ = sorted(str(r["value"]) for r in rows[:100_000])
    return time.perf_counter() - t0


PER_BLOCK = len(FRAMEWORKS) * len(MODELS) * len(BATCHES) * 6 * (7 + 50)  # rows a block writes
TARGETS = {"console": 3.0, "html": 8.0, "load": 3.0, "parquet": 5.0}  # seconds at 10^6 (issue 36)
LOAD = "import dlbench, sys; f = dlbench.load(sys.argv[1]).measurements(); print(len(f))"


# As a user runs them: an installed dlbench has its bytecode compiled (pip does it at install),
# so PYTHONDONTWRITEBYTECODE (set on some machines, this VM among them) is dropped here;
# with it every command compiled ~70 of dlbench's modules from source first (~0.15 s).
CHILD_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": str(ROOT / "src"),
    "COLUMNS": "150",
}


def timed(name: str, cmd: list[str], repeats: int, size: Any = None) -> tuple[float, float]:
    """Median wall and CPU seconds of `cmd` in a fresh process, printed with the ratio of
    wall time to the reference kernel."""
    times, kernel, cpu, peak = [], [], [], []
    # One untimed run first: it writes the bytecode cache, as pip's install would have.
    subprocess.run(cmd, capture_output=True, cwd=ROOT, env=CHILD_ENV)
    for _ in range(repeats):  # the median of a few: this VM's speed drifts by +-25%
        kernel.append(reference_kernel())
        # CPU seconds beside wall time: on a machine shared with other work, waiting for a
        # core inflates wall time, not CPU time. os.wait4 gives this child's own rusage, its
        # reaped children (HTML's figure processes) included: CPU and its peak RSS.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            child = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, env=CHILD_ENV)
            _, status, usage = os.wait4(child.pid, 0)
            times.append(time.perf_counter() - t0)
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            output = out.read()
            if child.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed:\n{(output + err.read())[-4000:].decode(errors='replace')}")
        cpu.append(usage.ru_utime + usage.ru_stime)
        peak.append(usage.ru_maxrss / 1024)  # Linux: KiB
    median = statistics.median(times)
    relative = statistics.median(t / k for t, k in zip(times, kernel, strict=True))
    shown = f" ({size(output):,} bytes)" if size else ""
    print(
        f"{name:38s}: median {median:6.2f} s of {', '.join(f'{t:.2f}' for t in times)}{shown}; "
        f"{relative:5.1f} x the reference kernel (median {statistics.median(kernel):.3f} s); "
        f"CPU {statistics.median(cpu):.2f} s; peak RSS {max(peak):,.0f} MiB",
        flush=True,
    )
    return median, statistics.median(cpu)


def write(db: str, blocks: int) -> tuple[int, int]:
    """Populate `db` with a run of `blocks` blocks; print the write rate. Returns (rows, run id)."""
    with Store(db) as store:
        spent = [0.0]
        add = store.add_measurements

        def counted(trial_id: int, rows: Any) -> int:  # the store's share of the writing
            t0 = time.perf_counter()
            n = add(trial_id, rows)
            spent[0] += time.perf_counter() - t0
            return n

        store.add_measurements = counted  # type: ignore[method-assign]
        t0, cpu0 = time.perf_counter(), time.process_time()
        n = populate(store, blocks=blocks)
        total, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        run_id = int(store.run()["id"])
    print(
        f"wrote {n:,} measurements ({blocks} blocks) in {total:.1f} s ({cpu:.1f} s CPU), of which {spent[0]:.1f} s in "
        f"Store.add_measurements ({n / spent[0]:,.0f} rows/s; the rest builds the synthetic values)",
        flush=True,
    )
    return n, run_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measurements", type=int, default=100_000, help="about how many rows to write")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per command (median)")
    parser.add_argument("--formats", default="console,html", help="report formats to time, comma-separated")
    parser.add_argument("--db", help="write into this database (a PostgreSQL URL) instead of a new SQLite file")
    parser.add_argument("--keep", type=Path, help="write the SQLite file here and keep it")
    parser.add_argument("--existing", help="time this database's latest run as it is: write nothing")
    args = parser.parse_args()
    blocks = max(1, round(args.measurements / PER_BLOCK))
    with tempfile.TemporaryDirectory() as tmp:
        db = args.existing or args.db or str(args.keep or Path(tmp) / "scale.db")
        if args.existing:
            with Store(db, readonly=True) as store:
                run_id = store.run()["id"]
                count = "SELECT COUNT(*) FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=?"
                n = int(store.db.execute(count, (run_id,)).fetchone()[0])
            print(f"{db}: run {run_id}, {n:,} measurements")
        else:
            n, run_id = write(db, blocks)
        results: dict[str, tuple[float, float]] = {}
        base = [sys.executable, "-m", "dlbench"]
        for fmt in args.formats.split(","):
            out = Path(tmp) / f"report.{fmt}"
            cmd = [*base, "report", "--run", str(run_id), "--format", fmt, "--db", db]
            cmd += [] if fmt == "console" else ["--out", str(out)]
            size = len if fmt == "console" else (lambda _, out=out: out.stat().st_size)
            results[fmt] = timed(f"dlbench report --format {fmt}", cmd, args.repeats, size)
        results["load"] = timed("dlbench.load(db).measurements()", [sys.executable, "-c", LOAD, db], args.repeats)
        out = Path(tmp) / "export.parquet"
        cmd = [*base, "export", str(out), "--run", str(run_id), "--format", "parquet", "--db", db]
        results["parquet"] = timed("dlbench export --format parquet", cmd, args.repeats, lambda _: out.stat().st_size)
    # The targets are set at 10^6 measurements; at 10^7 (a shared PostgreSQL) within ten times them.
    scale = 10 if n >= 3_000_000 else 1
    if n < 300_000:
        return  # no target at this size: the figures are for the README beside the others
    print(f"targets for 10^{6 if scale == 1 else 7} measurements:")
    for name, limit in TARGETS.items():
        if name in results:
            wall, cpu = results[name]
            verdict = "PASS" if wall <= limit * scale else "FAIL"
            print(f"  {name:8s} {wall:6.2f} s (CPU {cpu:6.2f} s), target {limit * scale:5.1f} s: {verdict}")


if __name__ == "__main__":
    main()
