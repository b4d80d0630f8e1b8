"""--executor and the [executor] table: validated like every other setting, one line
naming the flag or key, kept in the run's stored experiment text."""

from __future__ import annotations

import pytest

from dlbench import config
from dlbench.config_toml import to_toml
from dlbench.executors import ExecutorSettings

BASE = '[matrix]\nframework = ["numpy"]\nmodel = ["mlp"]\ndataset = ["digits"]\n'


def test_the_executor_table_is_read_and_written_back():
    exp = config.parse(
        BASE + '[executor]\nname = "slurm"\nslurm_partition = "gpu"\nslurm_gpus = 2\nslurm_time = 90\n'
        'slurm_options = ["constraint=a100", "exclusive"]\nslurm_folder = "/shared/jobs"\n',
        "e.toml",
    )
    assert exp.executor == ExecutorSettings(
        name="slurm",
        slurm_partition="gpu",
        slurm_gpus=2,
        slurm_time=90.0,
        slurm_options=("constraint=a100", "exclusive"),
        slurm_folder="/shared/jobs",
    )
    assert config.parse(to_toml(exp), "again.toml").executor == exp.executor
    # The default (local) writes no table at all.
    assert "[executor]" not in to_toml(config.parse(BASE, "d.toml"))


@pytest.mark.parametrize(
    "table, message",
    [
        ('name = "k8s"', "e.toml [executor] name 'k8s': allowed: local, ray, slurm"),
        ("workers = 3", "e.toml [executor]: unknown key 'workers'; allowed: name, ray_address"),
        ("slurm_gpus = 2.5", "e.toml [executor] slurm_gpus 2.5: expected an integer from 0 to 64"),
        ("slurm_time = -1", "e.toml [executor] slurm_time -1: expected minutes from 0 to 10080"),
        ('slurm_options = "mem=4G"', "expected a list of sbatch options like 'mem=4G'"),
        ('slurm_options = ["mem=4G\\nrm -rf /"]', "expected an sbatch option as key=value"),
        ('slurm_partition = "gpu; rm"', "expected a Slurm partition name"),
        ('ray_address = "10.0.0.1:6379"', "e.toml [executor] ray_address: only with"),
        ("executor = 1", None),
    ],
)
def test_a_bad_executor_table_is_one_error_naming_the_key(table, message):
    with pytest.raises(config.ConfigError) as err:
        config.parse(BASE + "[executor]\n" + table + "\n", "e.toml")
    if message is not None:
        assert message in str(err.value)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--executor", "k8s"], "--executor 'k8s': allowed: local, ray, slurm"),
        (["--executor", "slurm", "--slurm-gpus", "-1"], "--slurm-gpus -1: expected an integer from 0 to 64"),
        (["--executor", "slurm", "--slurm-option", "a b"], "--slurm-option 'a b': expected an sbatch option"),
        (["--ray-address", "127.0.0.1:1"], "--ray-address: only with --executor ray"),
    ],
)
def test_bad_executor_flags_are_one_line_and_store_nothing(tmp_path, flags, message, cli):
    db = tmp_path / "x.db"
    output = cli("run", "--trials", "1", "--framework", "numpy", "--model", "mlp", *flags, "--db", db, code=2)
    assert message in output and "Traceback" not in output
    assert not db.exists()
