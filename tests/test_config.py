"""Strict experiment files: every unknown key or value is an error naming file, key, allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench import config
from dlbench.config import ConfigError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_defaults_and_embedded_suite():
    exp = config.default()
    assert exp.matrix["framework"] == ("torch", "tensorflow", "jax")
    assert exp.matrix["model"] == ("mlp", "cnn")
    assert exp.include == ({"framework": ("sklearn",), "model": ("knn",)},)
    # Processes are the unit of evidence: 5 trials decide 3 frameworks (Holm), one repeat each.
    assert (exp.protocol.trials, exp.protocol.repeats, exp.protocol.warmup, exp.protocol.epochs) == (5, 1, 1, 3)
    assert exp.protocol.infer_min_time == 0.1


@pytest.mark.parametrize(
    "text,needle",
    [
        (
            "[matrix]\nframwork = ['torch']",
            "faults.toml [matrix]: unknown key 'framwork'; allowed keys: framework, model",
        ),
        (
            "[matrix]\nframework = ['pytorch']",
            "framework = 'pytorch': unknown framework; allowed: torch, tensorflow, jax",
        ),
        ("[matrix]\nframework = ['torch:jit']", "unknown variant of torch; allowed: eager, compile"),
        ("[matrix]\nmodel = ['resnet']", "model = 'resnet': unknown model; allowed: mlp, lenet5, cnn, knn"),
        ("[matrix]\ndataset = ['cifar']", "unknown dataset; allowed: digits, mnist, fashion-mnist"),
        ("[matrix]\ninit = ['he']", "unknown init; allowed: framework-default, glorot-uniform"),
        ("[matrix]\noptimizer = ['rmsprop']", "unknown optimizer; allowed: sgd, adam"),
        ("[matrix]\nbatch_size = [0]", "batch_size must be a positive integer"),
        ("[matrix]\nlr = [-1]", "lr must be a positive number"),
        ("[protocol]\nrepeats = 0", "repeats = 0: must be >= 1"),
        ("[protocol]\nrepeats = 'five'", "repeats = 'five': expected an integer"),
        ("[protocol]\nepochs = 1\nsteps = 5", "set exactly one of epochs and steps"),
        ("[protocol]\ninfer_min_time = -0.1", "infer_min_time = -0.1: must be in [0, 60] seconds (0 = one pass)"),
        ("[protocol]\nwarm_up = 1", "unknown key 'warm_up'; allowed keys: repeats, warmup, trials"),
        ("[protocol]\ndevice = 'tpu'", "device = 'tpu': allowed: cpu, cuda"),
        ("[synthetic]\nshape = [32, 32]", "shape = [32, 32]: expected [height, width, channels]"),
        ("[[exclude]]\nfw = 'torch'", "[[exclude]] #1: unknown key 'fw'"),
        ("[experimnt]\nname = 'x'", "faults.toml: unknown key 'experimnt'; allowed keys: experiment, matrix"),
        ("[matrix\n", "faults.toml: not valid TOML"),
    ],
)
def test_bad_input_names_file_key_and_allowed_values(text, needle):
    with pytest.raises(ConfigError) as err:
        config.parse(text, "faults.toml")
    assert needle in str(err.value)


def test_steps_replace_epochs_and_overrides_validate():
    exp = config.parse("[protocol]\nsteps = 50", "s.toml")
    assert exp.protocol.steps == 50 and exp.protocol.epochs is None
    exp2 = config.override(exp, {"batch_size": [32, 64]}, {"epochs": 2})
    assert exp2.matrix["batch_size"] == (32, 64)
    assert exp2.protocol.epochs == 2 and exp2.protocol.steps is None
    with pytest.raises(ConfigError, match=r"command line \(--framework\): framework = 'tf': unknown framework"):
        config.override(exp, {"framework": ["tf"]}, {})


def test_command_line_factor_narrows_includes():
    exp = config.default()
    narrowed = config.override(exp, {"framework": ["torch"]}, {})
    assert narrowed.include == ()
    kept = config.override(exp, {"framework": ["torch", "sklearn"]}, {})
    assert kept.include == exp.include


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.toml: no such experiment file"):
        config.load(tmp_path / "nope.toml")


def test_examples_parse():
    files = sorted(EXAMPLES.glob("*.toml"))
    assert files, "examples/ must hold at least one experiment file"
    for f in files:
        config.load(f)
