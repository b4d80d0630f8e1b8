"""`dlbench check`'s training comparison (dlbench.conformance.training): two trainings
from the same weights are compared step by step, and a difference is named from where
it shows. The rules on hand-made trainings first (each cause planted exactly), then
the real probes on user models with a planted training bug, torch against JAX."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dlbench import conformance
from dlbench.conformance import training

RNG = np.random.default_rng(0)
GIVEN = [
    ("kernel|torch Linear|fc1", RNG.normal(size=(6, 8))),
    ("bias|torch Linear|fc1", RNG.normal(size=8) * 0.1),
    ("mean|torch BatchNorm1d|bn", RNG.normal(size=8) * 0.1),
    ("var|torch BatchNorm1d|bn", 1 + RNG.random(8)),
    ("kernel|torch Linear|fc2", RNG.normal(size=(8, 3))),
]
STEP = [RNG.normal(size=a.shape) * 0.01 for _, a in GIVEN]
LOSSES = [2.3, 2.1, 1.95, 1.8]


def _save(tmp_path: Path, name: str, weights: list[tuple[str, np.ndarray]]) -> str:
    path = tmp_path / f"{name}.npz"
    np.savez(path, *[a for _, a in weights], roles=np.array([t for t, _ in weights]))
    return str(path)


def _trained(scale: float = 1.0, decay: float = 0.0, stats: float = 1.0) -> list[tuple[str, np.ndarray]]:
    """The given weights after a training whose steps are `scale` x the reference's, pulled
    toward zero by `decay` x the weights, with the statistics' steps `stats` x the reference's."""
    out = []
    for (tag, a), step in zip(GIVEN, STEP):
        is_stat = tag.split("|")[0] in training.STATISTICS
        out.append((tag, a + (stats if is_stat else scale) * step - (0.0 if is_stat else decay) * a))
    return out


def _compare(tmp_path: Path, sgd: dict, adam: dict | None = None) -> training.Compared:
    ref = {"losses": LOSSES, "lr": 0.01, "weights": _save(tmp_path, "ref-sgd", _trained())}
    ref_adam = {"losses": LOSSES, "lr": 1e-3, "weights": _save(tmp_path, "ref-adam", _trained())}
    mine_sgd = {"losses": sgd.get("losses", LOSSES), "lr": 0.01, "weights": _save(tmp_path, "sgd", sgd["weights"])}
    adam = adam or {"weights": _trained()}
    mine_adam = {"losses": adam.get("losses", LOSSES), "lr": 1e-3, "weights": _save(tmp_path, "adam", adam["weights"])}
    runs = {"torch": {"adam": ref_adam, "sgd": ref}, "jax": {"adam": mine_adam, "sgd": mine_sgd}}
    (compared,) = training.compare(runs, [(t, a.astype(np.float64)) for t, a in GIVEN], batch=16)
    assert compared.framework == "jax"
    return compared


def test_equal_trainings_are_the_same(tmp_path):
    c = _compare(tmp_path, {"weights": _trained()})
    assert c.same and not c.own
    assert "4 sgd steps: losses within 0, weights within 0" in c.words


def test_steps_scaled_by_one_factor_name_the_loss_reduction_or_learning_rate(tmp_path):
    c = _compare(tmp_path, {"weights": _trained(scale=2.0)})
    assert not c.same
    assert "every step is 2x the reference's" in c.words and "summed where the other averages" in c.words


def test_a_pull_toward_zero_is_named_weight_decay_with_its_size(tmp_path):
    # decay 1e-3 of the weights over 4 steps at lr 0.01: 0.025 per step.
    c = _compare(tmp_path, {"weights": _trained(decay=1e-3)})
    assert not c.same
    assert "weight decay (about 0.025 at lr 0.01) in jax only" in c.words


def test_a_first_loss_batch_times_larger_is_a_summed_loss(tmp_path):
    c = _compare(tmp_path, {"weights": _trained(), "losses": [v * 16 for v in LOSSES]})
    assert not c.same
    assert "before the first step (36.8 against 2.3): 16x: a loss summed over the batch of 16" in c.words


def test_another_first_loss_is_a_training_mode_layer_or_a_loss_term(tmp_path):
    c = _compare(tmp_path, {"weights": _trained(), "losses": [v + 0.05 for v in LOSSES]})
    assert not c.same and "computes differently in training mode, or a term added to the loss" in c.words


def test_statistics_alone_apart_name_the_momentum(tmp_path):
    c = _compare(tmp_path, {"weights": _trained(stats=0.1)})
    assert not c.same
    assert "batch-norm running statistics step apart: their momentum differs" in c.words


def test_adam_apart_with_sgd_equal_is_the_framework_own_optimizer(tmp_path):
    c = _compare(tmp_path, {"weights": _trained()}, adam={"weights": _trained(scale=1.5)})
    assert c.same, "the code trains alike: a difference in the framework's Adam is a warning"
    assert c.own.startswith("jax's Adam steps end 0.5 apart from torch's") and "not the code" in c.own
    small = _compare(tmp_path, {"weights": _trained()}, adam={"weights": _trained(scale=1.05)})
    assert small.same and not small.own, "5% apart after 10 Adam steps is within what equal code gives"


def test_other_gradients_name_the_tensors_that_differ_most(tmp_path):
    weights = _trained()
    weights[4] = (weights[4][0], weights[4][1] + 0.01)  # fc2's steps only
    c = _compare(tmp_path, {"weights": weights})
    assert not c.same and "the gradients differ, most in the kernel of fc2" in c.words


MODELS = """
import dlbench


def _torch(shape, classes, how):
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(shape[0], 16)
            self.bn = nn.BatchNorm1d(16, momentum=0.5 if how == "momentum" else 0.1)
            self.fc2 = nn.Linear(16, classes)
            if how == "decay":  # weight decay written into the gradients
                for p in self.parameters():
                    p.register_hook(lambda g, p=p: g + 0.05 * p.detach())

        def forward(self, x):
            y = self.fc2(torch.relu(self.bn(self.fc1(x))))
            if how == "double":  # the same outputs, twice the gradient
                return 2 * y - y.detach()
            if how == "train-mode" and self.training:
                return y * 1.5
            return y

    return Net()


def good(shape, classes):
    return _torch(shape, classes, "")


def double(shape, classes):
    return _torch(shape, classes, "double")


def decay(shape, classes):
    return _torch(shape, classes, "decay")


def momentum(shape, classes):
    return _torch(shape, classes, "momentum")


def train_mode(shape, classes):
    return _torch(shape, classes, "train-mode")


def flax(shape, classes, kernel_init=None, bias_init=None):
    import flax.linen as nn

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic=True):
            init = {"kernel_init": kernel_init} if kernel_init is not None else {}
            if bias_init is not None:
                init["bias_init"] = bias_init
            h = nn.Dense(16, **init)(x)
            h = nn.BatchNorm(use_running_average=deterministic, momentum=0.9, epsilon=1e-5)(h)
            return nn.Dense(classes, **init)(nn.relu(h))

    return Net()


GOOD = dlbench.Model("good", {"torch": good, "jax": flax}, input_kind="features")
DOUBLE = dlbench.Model("double", {"torch": double, "jax": flax}, input_kind="features")
DECAY = dlbench.Model("decay", {"torch": decay, "jax": flax}, input_kind="features")
MOMENTUM = dlbench.Model("momentum", {"torch": momentum, "jax": flax}, input_kind="features")
TRAIN_MODE = dlbench.Model("train_mode", {"torch": train_mode, "jax": flax}, input_kind="features")
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("flax")
    path = tmp_path_factory.mktemp("own_training") / "own_training.py"
    path.write_text(MODELS)
    return path


def _training(models: Path, attr: str) -> tuple[conformance.CheckReport, list[conformance.Finding]]:
    name = attr.lower()
    report = conformance.check(name, {f"model:{name}": f"{models}:{attr}"}, frameworks=("torch", "jax"), shape=(6,))
    return report, [f for f in report.findings if f.check == "training" and not f.warning]


def test_a_network_that_trains_alike_passes_with_its_numbers(models):
    report, (found,) = _training(models, "GOOD")
    assert found.ok, found.detail
    assert found.detail.startswith("jax: 10 SGD and 10 Adam steps from torch's weights on one batch, dropout off")
    assert report.ok and "the same gradient steps" in report.verdict()


@pytest.mark.parametrize(
    ("attr", "named"),
    [
        # Same outputs, twice the gradient in torch: jax's steps are half the reference's.
        ("DOUBLE", "plain SGD steps differ: every step is 0.5x the reference's"),  # the first step's
        # torch's gradients carry + 0.05 w: the pull toward zero is torch's (its sign says which side).
        ("DECAY", "weight decay (about 0.05 at lr 0.01) in torch only"),
        # torch's batch norm updates its statistics at 0.5, Flax's at 0.1 (its momentum 0.9).
        ("MOMENTUM", "batch-norm running statistics step apart: their momentum differs"),
        # Outputs scaled in training mode only: equal outputs after the copy, another training loss.
        ("TRAIN_MODE", "the training loss differs before the first step"),
    ],
)
def test_a_planted_training_difference_fails_and_is_named(models, attr, named):
    report, (found,) = _training(models, attr)
    assert not found.ok and named in found.detail, found.detail
    assert _finding_ok(report, "outputs"), "the forward pass agrees: only the training differs"
    assert not report.ok and "FAILED: training (jax)" in report.verdict()


def _finding_ok(report: conformance.CheckReport, check: str) -> bool:
    return all(f.ok for f in report.findings if f.check == check)


def test_the_first_step_judges_and_a_later_drift_is_a_warning(tmp_path):
    """With the first SGD step recorded, the code is judged on it (nothing compounded yet);
    ten steps that drift apart after an equal first step are rounding that grows."""
    runs = {}
    for fw, later in (("torch", 1.0), ("jax", 1.3)):
        first = _save(tmp_path, f"{fw}-first", _trained(scale=0.1))
        sgd = {
            "losses": LOSSES,
            "lr": 0.01,
            "weights": _save(tmp_path, f"{fw}-sgd", _trained(later)),
            "first_weights": first,
        }
        adam = {"losses": LOSSES, "lr": 1e-3, "weights": _save(tmp_path, f"{fw}-adam", _trained())}
        runs[fw] = {"adam": adam, "sgd": sgd}
    (c,) = training.compare(runs, [(t, a.astype(np.float64)) for t, a in GIVEN], batch=16)
    assert c.same and c.words.startswith("first SGD step within 0; ")
    assert (
        c.own.startswith("jax's 4 SGD steps end 0.3 apart from torch's")
        and "the difference grows over later steps" in c.own
    )


def test_a_second_gru_bias_is_named_as_the_frameworks_and_anything_more_is_not():
    """torch's GRU holds b_ih and b_hh, Flax's GRUCell one bias for the update and reset gates:
    from the same weights one SGD step moves torch's sum twice as far. In the canonical (2, 3H)
    bias, torch's recurrent z, r step as far as its input ones, Flax's stay zero."""
    from dlbench.conformance.training import second_gru_bias

    rng = np.random.default_rng(0)
    h = 4
    kernel = rng.normal(size=(3, 3 * h))
    bias = np.zeros((2, 3 * h))
    given = [("kernel|torch GRU|gru", kernel), ("bias|torch GRU|gru", bias)]
    step_k, step_in, step_hn = rng.normal(size=kernel.shape), rng.normal(size=3 * h), rng.normal(size=h)
    torch_bias = bias + np.stack([step_in, np.concatenate([step_in[: 2 * h], step_hn])])
    flax_bias = bias + np.stack([step_in, np.concatenate([np.zeros(2 * h), step_hn])])
    torch_step = [("kernel|torch GRU|gru", kernel + step_k), ("bias|torch GRU|gru", torch_bias)]
    flax_step = [("kernel|Flax GRUCell|gru", kernel + step_k), ("bias|Flax GRUCell|gru", flax_bias)]
    assert second_gru_bias(flax_step, torch_step, given) == "reference"
    assert second_gru_bias(torch_step, flax_step, given) == "mine"
    assert second_gru_bias(torch_step, torch_step, given) is None  # nothing differs: no second bias to name
    # A kernel that steps differently too is the code's: not explained by the biases.
    off = [("kernel|Flax GRUCell|gru", kernel + 1.5 * step_k), flax_step[1]]
    assert second_gru_bias(off, torch_step, given) is None
    # The input biases stepping apart is not the pattern either.
    skewed = [flax_step[0], ("bias|Flax GRUCell|gru", flax_bias + np.stack([0.5 * step_in, np.zeros(3 * h)]))]
    assert second_gru_bias(skewed, torch_step, given) is None
