"""Each trial's manifest records the seed every repeat really trained with: the run's seed
offset per block and repeat (phases.repeat_seed), which the stored case (the run's seed,
the same for every trial) does not say."""

from __future__ import annotations

from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.store import Store
from dlbench.trial.phases import BLOCK_SEED_STRIDE, repeat_seed


def test_every_trial_records_the_seeds_its_repeats_trained_with(tmp_path):
    db = tmp_path / "seeds.db"
    result = CliRunner().invoke(
        app,
        [
            "run", "--framework", "numpy", "--model", "mlp", "--dataset", "digits", "--trials", "2",
            "--repeats", "2", "--warmup", "1", "--epochs", "1", "--latency-batches", "0", "--infer-min-time", "0",
            "--samplers", "none", "--seed", "7", "--db", str(db),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store(db, readonly=True) as store:
        trials = store.trials(store.run().id)
    assert sorted(t.block for t in trials) == [0, 1]
    for t in trials:
        assert t.case["seed"] == 7  # the run's seed, as every trial stores it
        # warm-up 0, repeats 1 and 2: seed + block * stride + repeat
        assert t.manifest["seeds"] == [7 + t.block * BLOCK_SEED_STRIDE + r for r in range(3)]
        assert t.manifest["seeds"] == [repeat_seed(7, t.block, r) for r in range(3)]
    assert trials[0].manifest["seeds"] != trials[1].manifest["seeds"]
