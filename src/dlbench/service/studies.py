"""A study's report section: the paper's numbers beside one or more stored runs of it.

`dlbench study run` puts it before the run's report, `dlbench study report` before the
report of the runs it finds; both call `paper_section` (one machine per run, nothing
pooled across them).
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.criteria import ALPHA, BAND


def runs_of(store: Any, study: Any) -> list[Any]:
    """The study's stored runs in `store` (the study names them "study NAME vN ...")."""
    prefix = f"study {study.name} v"
    return [r for r in store.runs() if str(r["name"]).startswith(prefix)]


def paper_section(study: Any, facts: Any, runs: list[tuple[Any, int]], band: float = BAND, alpha: float = ALPHA) -> Any:
    """The paper vs this run section for one or more (store, run id), one machine each; its
    verdicts at `band` and `alpha`."""
    from dlbench.env import machine_label
    from dlbench.report import study_section
    from dlbench.results import Results
    from dlbench.studies import paper_vs_run

    machines: list[paper_vs_run.Machine] = []
    scales: list[str] = []
    for store, run_id in runs:
        results = Results.of_store(store)
        row = store.run(run_id)
        scales.append(str(row["name"]).rsplit(" ", 1)[-1])
        fingerprint = row.environment
        label = machine_label(fingerprint)
        if any(m.label == label for m in machines):
            label += f" (run {run_id})"

        def compare(a: str, b: str, metric: str, results=results, run_id=run_id):
            return results.compare(a, b, metric=metric, run=run_id, band=band, alpha=alpha)

        machines.append(
            paper_vs_run.Machine(
                label,
                run_id,
                results.summary(run_id),
                compare,
                fingerprint,
                results.measurements(run_id),
                band=band,
                alpha=alpha,
            )
        )
    comparison = paper_vs_run.compare(study, facts, machines)
    scale = scales[0] if len(set(scales)) == 1 else "/".join(scales)
    changes = study.scales[scales[0]].changes if scales[0] in study.scales else ()
    preface = study_section.build(study, facts, comparison, scale, changes)
    if len(runs) > 1:
        preface.lines.append(
            f"{len(runs)} machines, one column group each, nothing pooled across them; the report below is "
            f"run {runs[0][1]}'s (the first machine's)."
        )
    return preface
