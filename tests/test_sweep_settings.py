"""Sweep factors (input_shape, precision, layout), model options, memory limit and
time-to-accuracy settings: parsed strictly, expanded into cases, refused with reasons;
and the sweep tables built from stored summaries (OOM rows as gaps)."""

from __future__ import annotations

import pytest

from dlbench import config
from dlbench.analysis.summary import CaseSummary, describe
from dlbench.analysis.sweeps import sweeps
from dlbench.config import ConfigError, parse_memory
from dlbench.plan import expand
from dlbench.report.sweep_tables import largest_batch_table, sweep_table


def _exp(text: str):
    return config.parse(text, "s.toml")


def test_input_shape_sets_synthetic_image_side_and_is_refused_for_fixed_datasets():
    plan = expand(
        _exp("""
[matrix]
framework = ["torch"]
model = ["cnn"]
dataset = ["synthetic", "digits"]
input_shape = [0, 32, 64]
[synthetic]
shape = [28, 28, 3]
""")
    )
    shapes = sorted(
        (t.case.dataset, t.case.input_shape, t.case.synthetic[:3] if t.case.synthetic else None) for t in plan.trials
    )
    assert shapes == [
        ("digits", 0, None),
        ("synthetic", 0, (28, 28, 3)),
        ("synthetic", 32, (32, 32, 3)),
        ("synthetic", 64, (64, 64, 3)),
    ]
    reasons = [s.reason for s in plan.skipped]
    assert reasons == [
        "input_shape 32 applies to the synthetic dataset; digits has a fixed 8x8x1 input",
        "input_shape 64 applies to the synthetic dataset; digits has a fixed 8x8x1 input",
    ]


def test_layout_channels_first_is_refused_where_the_framework_has_none():
    plan = expand(
        _exp("""
[matrix]
framework = ["torch", "tensorflow", "jax"]
model = ["cnn"]
layout = ["channels-last", "channels-first"]
""")
    )
    ran = {(t.case.framework, t.case.layout) for t in plan.trials}
    assert ran == {
        ("torch", "channels-last"),
        ("torch", "channels-first"),
        ("tensorflow", "channels-last"),
        ("jax", "channels-last"),
    }
    why = {s.cell["framework"]: s.reason for s in plan.skipped}
    assert "no NCHW convolution" in why["tensorflow"] and "Flax's Conv takes NHWC" in why["jax"]


@pytest.mark.parametrize(
    "text,message",
    [
        ("[matrix]\nprecision = ['fp8']", "precision = 'fp8': unknown precision; allowed: float32, tf32, bf16-mixed"),
        (
            "[matrix]\nlayout = ['nchw']",
            "layout = 'nchw': unknown layout; allowed: native, channels-last, channels-first",
        ),
        ("[matrix]\ninput_shape = [-3]", "input_shape = -3: input_shape must be a positive integer"),
        ("[models.cnn]\nwidth = 3", "s.toml [models.cnn]: model cnn has no option 'width' (options: none)"),
        ("[models.vgg99]\nwidth = 3", "s.toml [models.vgg99]: unknown model 'vgg99'"),
        ("[protocol]\nmemory_limit = '2 parsecs'", "memory_limit = '2 parsecs': expected a size such as 512MiB"),
        ("[protocol]\nmemory_limit = '1MiB'", "below 64 MiB"),
        ("[protocol]\ntarget_accuracy = 97", "target_accuracy = 97.0: must be a fraction in (0, 1]"),
        ("[protocol]\ntarget_accuracy = 0.9\nsteps = 100", "target_accuracy trains epoch by epoch: set epochs"),
    ],
)
def test_bad_sweep_settings_name_the_key_and_what_is_allowed(text, message):
    with pytest.raises(ConfigError) as err:
        _exp(text)
    assert message in str(err.value)


def test_memory_sizes():
    assert parse_memory("2GiB") == 2 * 2**30
    assert parse_memory("1.5GB") == 1_500_000_000
    assert parse_memory("512MiB") == 512 * 2**20
    assert parse_memory("") == parse_memory("0") == 0
    assert parse_memory(str(2**30)) == 2**30


def test_model_options_from_flags_are_typed_and_validated():
    assert config.parse_option_flags([]) == {}
    with pytest.raises(ConfigError, match="expected MODEL.OPTION=VALUE"):
        config.parse_option_flags(["hidden=3"])
    with pytest.raises(ConfigError, match="model mlp has no option 'hidden'"):
        config.parse_option_flags(["mlp.hidden=3"], sources={})


def _summary(batch: int, status: str, infer_tp: float | None, train_tp: float | None) -> CaseSummary:
    case = {
        "framework": "torch",
        "variant": "eager",
        "model": "resnet18",
        "dataset": "synthetic",
        "batch_size": batch,
        "init": "glorot-uniform",
        "optimizer": "sgd",
        "lr": 0.01,
        "epochs": 1,
        "steps": None,
        "input_shape": 32,
    }
    stats = {}
    if infer_tp is not None:
        stats[("infer", "throughput")] = describe([infer_tp, infer_tp])
        stats[("train", "throughput")] = describe([train_tp, train_tp])
    return CaseSummary(f"k{batch}", case, 1, {status: 1}, True, stats)


def test_sweep_reports_fastest_per_sample_batch_and_largest_that_fits():
    found = sweeps(
        [
            _summary(1, "ok", 500.0, 100.0),
            _summary(8, "ok", 2000.0, 400.0),
            _summary(32, "ok", 1600.0, 450.0),
            _summary(64, "oom", None, None),
        ]
    )
    (w,) = found
    assert [p.batch_size for p in w.points] == [1, 8, 32, 64]
    assert w.fastest.batch_size == 8 and w.fastest.infer_per_sample == pytest.approx(1 / 2000)
    assert w.largest_ok == 32 and w.smallest_oom == 64
    assert w.points[-1].infer_per_sample is None  # the OOM cell is a gap, never a zero
    table = sweep_table(found)
    rows = {r[1]: r for r in table.rows}
    assert rows["64"][2] == "OOM" and rows["64"][3] == "—"
    assert rows["8"][3] == "500" and "fastest per sample" in rows["8"][5]
    assert "largest that fits (b64 ran out of memory)" in rows["32"][5]
    big = largest_batch_table(found)
    assert big.rows == [[w.label, "32", "64", "b8"]]


def test_model_options_survive_the_json_trip_to_the_worker_as_tuples():
    import json

    from dlbench.trial.phases import settings_for

    plan = expand(
        _exp("""
[matrix]
framework = ["jax"]
model = ["resnet18"]
dataset = ["synthetic"]
[models.resnet18]
width = 8
""")
    )
    from dlbench.trial.spec import case_from_dict

    case = case_from_dict(json.loads(json.dumps(plan.trials[0].case.as_dict())))  # what the worker receives
    options = settings_for(case, 0).model_options
    assert options["blocks"] == (2, 2, 2, 2) and options["width"] == 8
    hash(tuple(sorted(options.items())))  # the JAX adapter's compile-cache key


def test_relative_memory_limit():
    from dlbench.config import parse_memory_limit

    assert parse_memory_limit("+512MiB") == (512 * 2**20, True)
    assert parse_memory_limit("2GiB") == (2 * 2**30, False)
    assert parse_memory_limit("+8MiB") == (8 * 2**20, True)  # small increments are allowed above a footprint
    with pytest.raises(ValueError, match="expected a size"):
        parse_memory_limit("+lots")


@pytest.mark.parametrize(
    "message,oom",
    [
        (
            "Status: 1, message: could not create a memory object, in file tensorflow/core/kernels/mkl/mkl_conv_ops.cc",
            True,
        ),  # oneDNN's dnnl_out_of_memory through TensorFlow (an AbortedError)
        ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 4718592 bytes", True),
        ("RESOURCE_EXHAUSTED: Out of memory allocating 1638400 bytes.", True),
        ("Status: 2, message: could not create a primitive", False),  # invalid arguments, not memory
        ("boom: the model diverged", False),
    ],
)
def test_out_of_memory_is_recognised_in_each_frameworks_words(message, oom):
    from dlbench.trial.worker import is_oom

    assert is_oom(RuntimeError(message)) is oom
