"""list, check and env: what this installation offers and whether a model is the same network everywhere."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from dlbench.cli.app import app
from dlbench.cli.common import (
    console,
    err_console,
    fail,
    named_sources,
    show_table,
    split_values,
)
from dlbench.cli.options import ListOpt, OptionOpt


@app.command("list")
def list_(
    params: Annotated[
        bool,
        typer.Option(
            "--params/--no-params",
            help="Build every model in every installed "
            "framework to show its trainable-parameter count (cached after the "
            "first time).",
        ),
    ] = True,
) -> None:
    """Frameworks (installed versions or why not), models (parameter counts per framework), datasets."""
    from rich.table import Table

    from dlbench import registry
    from dlbench.datasets.inputs import shown as shown_shape
    from dlbench.param_counts import framework_counts, reference_point

    t = Table(title="frameworks")
    for col in ("name", "variants", "status", "versions"):
        t.add_column(col, overflow="fold")
    installed = {}
    for info in registry.frameworks().values():
        reason = info.unavailable_reason()
        versions = ", ".join(f"{k} {v}" for k, v in info.versions().items() if v != "not installed")
        t.add_row(info.name, ", ".join(info.variants), reason or "installed", versions)
        if reason is None and info.param_counter is not None:
            installed[info.name] = versions
    console.print(t)
    counts = {}
    if params and installed:
        err_console.print(f"counting parameters in {', '.join(installed)} (built once, then cached) ...")
        counts = framework_counts(installed)
    t = Table(
        title="models: trainable parameters at the input shown, as each framework builds them, "
        "beside the spec's formula and the published count"
    )
    # A count is one number and an origin one name ("plugin dsconv-models"): they never wrap
    # (the description takes what room is left).
    whole = {"formula", *counts, "published", "from"}
    for col in ("name", "input, classes", "formula", *counts, "published", "description", "from"):
        t.add_column(col, overflow="fold", no_wrap=col in whole)
    for spec in registry.models({}):
        if spec.kind == "classical":
            t.add_row(spec.name, "—", "—", *("—" for _ in counts), "—", spec.description, spec.origin)
            continue
        shape, classes, published = reference_point(spec)
        formula = spec.count(shape, classes) if spec.param_count is not None else None

        def shown(fw: str) -> str:
            got = counts[fw]
            if isinstance(got.get("error"), str):  # the whole framework failed to count
                return f"error: {got['error']}"
            value = got.get(spec.name)
            if value is None:
                return "—"
            if isinstance(value, dict):
                return f"error: {value['error']}"
            return f"{value:,}" + ("" if formula is None or value == formula else " (≠ formula)")

        t.add_row(
            spec.name,
            f"{'x'.join(map(str, shape))}, {classes}",
            f"{formula:,}" if formula is not None else "—",
            *(shown(fw) for fw in counts),
            f"{published:,}" if published else "—",
            spec.description,
            spec.origin,
        )
    console.print(t)
    t = Table(title="datasets")
    for col in ("name", "shape", "classes", "location", "description", "from"):
        t.add_column(col, overflow="fold")
    for data in registry.datasets({}):
        shape, classes = data.shape(None)
        found, searched = data.locate(None)
        if found is not None:
            where = str(found)
        elif searched:
            where = "not found locally (downloaded on first use)"
        else:
            where = "in memory" if data.fixed_shape else "generated in memory"
        t.add_row(data.name, shown_shape(shape), str(classes), where, data.description, data.origin)
    console.print(t)
    err_console.print(
        "your own: --model PATH.py:NAME or package.module:NAME (see docs/tutorial.md), "
        "--dataset FILE.npz or a directory of IDX files; plugins: entry points dlbench.models, "
        "dlbench.datasets, dlbench.frameworks"
    )


@app.command()
def check(
    model: Annotated[str, typer.Argument(help="A model name, or your own: PATH.py:NAME or package.module:NAME.")],
    framework: ListOpt = None,
    input_shape: Annotated[
        str | None, typer.Option(help="One sample's shape, e.g. 28x28x1 (default: the model's own, else 28x28x1).")
    ] = None,
    classes: Annotated[int | None, typer.Option(help="Output classes (default: the dataset's, else 10).")] = None,
    dataset: Annotated[
        str | None,
        typer.Option(help="Take the sample shape and classes from this dataset: a name, or your own .npz / IDX dir."),
    ] = None,
    option: OptionOpt = None,
) -> None:
    """Conformance: is MODEL the same network in every framework? Parameter counts, output shapes, whether it
    learns (Adam steps on a fixed batch, judged on a held-out batch; at the model's check size, its tiny
    options, unless --option is given), gradients reaching every weight, same seed
    same losses, logits after copying one framework's weights into the others, and training from those copied
    weights (10 SGD and 10 Adam steps on one batch, dropout off: losses and trained weights compared, a
    difference named: loss reduction, weight decay, a training-mode layer, batch-norm momentum). One line per
    check, then the verdict. Exits 1 when a build or check fails or the implementations are not the same network
    or do not train alike; a warning (layers the init scheme did not reach, a framework's own Adam or recurrent
    bias) is printed and leaves the exit status 0."""
    from dlbench import config, conformance, registry
    from dlbench.datasets import DatasetError

    if dataset is not None and "," in dataset:
        fail(f"--dataset {dataset!r}: check takes one dataset")
    sources = named_sources(model, dataset)
    name = next((k.partition(":")[2] for k in sources if k.startswith("model:")), model)
    try:
        spec = registry.model(name, sources)
    except registry.RegistryError as exc:
        fail(str(exc))
    shape: Any = None
    if dataset is not None:
        if input_shape is not None:
            fail(f"--input-shape with --dataset {dataset}: the dataset decides the shape; give one of them")
        data_name = next((k.partition(":")[2] for k in sources if k.startswith("dataset:")), dataset)
        try:
            data_shape, data_classes = registry.dataset(data_name, sources).shape(None)
        except (registry.RegistryError, DatasetError) as exc:
            fail(f"--dataset {dataset}: {exc}")
        shape = data_shape if isinstance(data_shape, dict) else tuple(data_shape)  # named inputs: name -> shape
        classes = data_classes if classes is None else classes
    if input_shape is not None:
        try:
            shape = tuple(int(d) for d in input_shape.lower().split("x"))
            if not all(d > 0 for d in shape):
                raise ValueError
        except ValueError:
            fail(f"--input-shape {input_shape!r}: expected positive integers joined by x, e.g. 28x28x1 or 128")
    if shape is not None and (reason := spec.check_input(shape)):
        given = f"--dataset {dataset}" if dataset is not None else f"--input-shape {input_shape}"
        fail(f"{given}: {name} {reason}")
    classes = 10 if classes is None else classes
    # A dataset of several named outputs gives head -> classes or K, each checked when it was read.
    if not isinstance(classes, dict) and classes < (1 if spec.task == "regress" else 2):
        what = "a regression at least 1 target" if spec.task == "regress" else "a classifier at least 2 classes"
        fail(f"--classes {classes}: {what}")
    try:
        options = config.parse_option_flags(option or [], sources=sources).get(name, {})
    except config.ConfigError as exc:
        fail(str(exc))
    # Not named: every framework that declares conformance hooks (FrameworkInfo.conformance).
    frameworks = tuple(split_values(framework) or ()) or tuple(
        n for n, i in registry.frameworks().items() if i.conformance is not None
    )
    for fw in frameworks:
        if fw not in registry.frameworks():
            fail(f"--framework {fw}: unknown framework; allowed: {', '.join(registry.frameworks())}")
    err_console.print(f"checking {name} in {', '.join(frameworks)} (one process each) ...")
    report = conformance.check(name, sources, frameworks=frameworks, shape=shape, classes=classes, options=options)
    # One line each, never wrapped (soft_wrap): a line is one finding, for a reader and for grep.
    for fw, why in report.skipped.items():
        console.print(f"skipped {fw}: {why}", highlight=False, soft_wrap=True)
    for f in report.findings:
        mark = "FAIL" if not f.ok else "warn" if f.warning else "ok  "
        console.print(f"{mark} {f.check}: {f.detail}", highlight=False, soft_wrap=True)
    console.print(report.verdict(), highlight=False, soft_wrap=True)  # last: after every line it sums up
    # Remembered for the runs of this code (their reports say it): a file's model only.
    from dlbench.conformance import record

    source = sources.get(f"model:{name}")
    if source is not None:
        record.save(name, source, options, report.ok, report.verdict())
    if not report.ok:
        raise typer.Exit(1)


@app.command("env")
def env_(
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="console (default: tables) or json (one JSON document on standard output and nothing else; "
            "docs/json.md).",
        ),
    ] = "console",
) -> None:
    """This machine's fingerprint and which telemetry samplers can measure here (and why not)."""
    from dlbench import samplers
    from dlbench.env import fingerprint
    from dlbench.report import json_out

    if fmt not in ("console", "json"):
        fail(f"--format {fmt!r}: allowed: console, json")
    machine = fingerprint()
    if fmt == "json":
        sys.stdout.write(json_out.dumps(json_out.env_document(machine, samplers.availability())))
        return
    from dlbench.report.tables import samplers_table

    show_table(json_out.env_table(machine))
    # The whole table here (the reasons and what would enable each): `run` says it in one line.
    show_table(samplers_table(samplers.availability()))
