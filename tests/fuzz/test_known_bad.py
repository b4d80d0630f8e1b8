"""Known-bad inputs, one per row: each is refused with one line that names the file
or flag, the key and what is allowed (exit status 2 on the command line), never a
traceback, and nothing is stored. Most rows were accepted, or crashed, before the
parse-time bounds (issue 14, "Hardening")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlbench import config
from dlbench.cli import app
from dlbench.config import ConfigError
from dlbench.store import Store

from .invariants import check_refusal, tally

cli = CliRunner()
CORES = len(os.sched_getaffinity(0))  # the cores this process (and its workers) may use

BAD_FILES = [
    # numbers that overflowed later, or were never finite
    ("[protocol]\ntimeout = inf", "timeout = inf: must be a finite number of seconds in (0, 604800] (at most 7 days)"),
    ("[protocol]\ntimeout = nan", "timeout = nan: must be a finite number of seconds in (0, 604800]"),
    ("[protocol]\ntimeout = 1e12", "timeout = 1000000000000.0: must be a finite number of seconds in (0, 604800]"),
    ("[protocol]\ntimeout = 604801", "timeout = 604801.0: must be a finite number of seconds in (0, 604800]"),
    ("[protocol]\ntimeout = " + "9" * 400, "timeout = " + "9" * 57 + "...: must be a finite number of seconds"),
    ("[protocol]\ntimeout = -inf", "timeout = -inf: must be a finite number of seconds"),
    ("[protocol]\nidle_baseline = 1e12", "idle_baseline = 1000000000000.0: must be in [0, 3600] seconds"),
    ("[protocol]\nidle_baseline = nan", "idle_baseline = nan: must be in [0, 3600] seconds"),
    ("[protocol]\nsample_interval = 61", "sample_interval = 61.0: must be 0 (source defaults) or in [0.01, 60] s"),
    ("[protocol]\nsample_interval = nan", "sample_interval = nan: must be 0 (source defaults) or in [0.01, 60] s"),
    ("[protocol]\nbudget = inf", "budget = inf: must be in [0, 43200] minutes (0 = no limit; at most 30 days)"),
    ("[protocol]\nbudget = -1", "budget = -1.0: must be in [0, 43200] minutes"),
    ("[protocol]\ntta_budget = 1e9", "tta_budget = 1000000000.0: must be in [0, 604800] seconds"),
    ("[protocol]\ninfer_min_time = nan", "infer_min_time = nan: must be in [0, 60] seconds (0 = one pass)"),
    ("[protocol]\nmomentum = nan", "momentum = nan: must be in [0, 1)"),
    ("[protocol]\nmomentum = 1", "momentum = 1.0: must be in [0, 1)"),
    ("[protocol]\nuntil_ci = nan", "until_ci = nan: must be a percentage in (0, 100), or 0 for a fixed design"),
    ("[protocol]\ntarget_accuracy = nan", "target_accuracy = nan: must be a fraction in (0, 1], or 0 for no target"),
    ("[protocol]\nrepeats = 10001", "repeats = 10001: must be >= 1 and <= 10000"),
    ("[protocol]\nrepeats = 0", "repeats = 0: must be >= 1 and <= 10000"),
    ("[protocol]\nwarmup = 1001", "warmup = 1001: must be >= 0 and <= 1000"),
    ("[protocol]\ntrials = 1001", "trials = 1001: must be >= 1 and <= 1000"),
    (
        "[protocol]\nmax_repeats = 100000000000000000000",
        "max_repeats = 100000000000000000000: must be >= 1 and <= 1000",
    ),
    ("[protocol]\nlatency_batches = 100001", "latency_batches = 100001: must be >= 0 and <= 100000"),
    ("[protocol]\nepochs = 100001", "epochs = 100001: must be >= 1 and <= 100000"),
    ("[protocol]\nsteps = 9223372036854775808", "steps = 9223372036854775808: must be >= 1 and <= 100000000"),
    ("[protocol]\ntrain_samples = 2147483648", "train_samples = 2147483648: must be >= 0 and <= 2147483647 (0 = all)"),
    ("[protocol]\ntest_samples = -1", "test_samples = -1: must be >= 0 and <= 2147483647 (0 = all)"),
    ("[protocol]\nseed = -1", "seed = -1: must be an integer in [0, 2147472647] (repeat r trains with seed + r"),
    ("[protocol]\nseed = 2147483647", "seed = 2147483647: must be an integer in [0, 2147472647]"),
    (
        "[protocol]\nthreads = 999",
        f"threads = 999: must be 0 (one per physical core) or 1..{CORES}, the cores available here",
    ),
    ("[protocol]\nthreads = -1", f"threads = -1: must be 0 (one per physical core) or 1..{CORES}"),
    (
        "[protocol]\nmemory_limit = '99999999999999999999TiB'",
        "memory_limit = '99999999999999999999TiB': above 281474976710656 bytes (256 TiB, 2**48)",
    ),
    ("[protocol]\nmemory_limit = '+257TiB'", "memory_limit = '+257TiB': above 281474976710656 bytes"),
    ("[protocol]\nmemory_limit = '1" + "0" * 400 + "'", "memory_limit = '1000000000000000000000000000000000"),
    ("[protocol]\nmemory_limit = -3", "memory_limit = -3: expected a string"),
    ('[protocol]\ndata_dir = "a\\u0000b"', "data_dir = 'a\\x00b': expected a directory path (a string without NUL"),
    ("[protocol]\nsamplers = 'bogus'", "samplers = 'bogus': unknown sampler(s) bogus; allowed: cpu, rapl"),
    ("[protocol]\nuntil_ci_metrics = 'x'", "until_ci_metrics = 'x': 'x' is not a timed phase.metric (allowed:"),
    ("[protocol]\ndevice = ['cpu']", "device = ['cpu']: expected a string"),
    # matrix factors
    (
        "[matrix]\nbatch_size = [100000000000000000000]",
        "batch_size = 100000000000000000000: batch_size must be a positive integer, at most 1048576 (2**20)",
    ),
    (
        "[matrix]\nbatch_size = [1048577]",
        "batch_size = 1048577: batch_size must be a positive integer, at most 1048576",
    ),
    ("[matrix]\nbatch_size = [32.0]", "batch_size = 32.0: batch_size must be a positive integer"),
    ("[matrix]\nlr = [nan]", "lr = nan: lr must be a positive number, finite and at most 100: in (0, 100]"),
    ("[matrix]\nlr = [1e999]", "lr = inf: lr must be a positive number, finite and at most 100: in (0, 100]"),
    ("[matrix]\nlr = [101]", "lr = 101: lr must be a positive number, finite and at most 100"),
    ("[matrix]\nlr = [" + "9" * 400 + "]", "lr = " + "9" * 57 + "...: lr must be a positive number"),
    ("[matrix]\nlr = []", "lr is empty; give at least one value"),
    ("[matrix]\ninput_shape = [16385]", "input_shape = 16385: input_shape must be a positive integer, at most 16384"),
    ("[matrix]\nframework = [1]", "framework = 1: expected a string such as 'torch' or 'torch:compile'"),
    ("[matrix]\nmodel = [{a = 1}]", "model = {'a': 1}: unknown model; allowed: mlp"),
    (
        "[matrix]\nbatch_size = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nlr = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
        "input_shape = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]\n[protocol]\ntrials = 1000",
        "3000 matrix cells x 1000 trials = 3000000 trials: at most 100000 in one run",
    ),
    # experiment name and description
    ("[experiment]\nname = {a = 1}", "[experiment]: name = {'a': 1}: expected a string"),
    (
        "[experiment]\nname = ''",
        "name = '': must be a non-empty string of printable characters, at most 200 characters long",
    ),
    ('[experiment]\nname = "a\\nb"', "name = 'a\\nb': must be a non-empty string of printable characters"),
    ("[experiment]\nname = '" + "x" * 201 + "'", "must be a non-empty string of printable characters, at most 200"),
    ("[experiment]\ndescription = 3", "[experiment]: description = 3: expected a string"),
    (
        '[experiment]\ndescription = "bell\\u0007"',
        "description = 'bell\\x07': must be text without control characters (line breaks and tabs are fine)",
    ),
    # synthetic data
    (
        "[synthetic]\ntrain_size = 100000000000000000000",
        "train_size = 100000000000000000000: expected an integer >= 1 and <= 2147483647",
    ),
    ("[synthetic]\nclasses = 1048577", "classes = 1048577: expected an integer >= 2 and <= 1048576"),
    (
        "[synthetic]\nshape = [16385, 8, 1]",
        "shape = [16385, 8, 1]: expected [height, width, channels], positive "
        "integers (height and width at most 16384, channels at most 4096)",
    ),
    # model options
    (
        "[models.lstm]\nhidden = -5",
        "[models.lstm]: model lstm option 'hidden' = -5: must be an integer in [1, 1048576]",
    ),
    ("[models.lstm]\nhidden = 1.5", "model lstm option 'hidden' = 1.5: must be an integer in [1, 1048576]"),
    ("[models.lstm]\nlayers = 1025", "model lstm option 'layers' = 1025: must be an integer in [1, 1024]"),
    ("[models.lstm]\ndropout = 1.0", "model lstm option 'dropout' = 1.0: must be a finite number in [0, 1)"),
    ("[models.lstm]\ndropout = nan", "model lstm option 'dropout' = nan: must be a finite number in [0, 1)"),
    ("[models.lstm]\nvocab = 0", "model lstm option 'vocab' = 0: must be an integer in [1, 1048576] (or left out)"),
    ("[models.transformer]\nlayers = 'x'", "model transformer option 'layers' = 'x': must be an integer in [1, 1024]"),
    ("[models.transformer]\nhidden = 30", "transformer hidden (30) must be divisible by heads (4)"),
    ("[models.transformer]\npreset = 'huge'", "model transformer option 'preset' = 'huge': allowed: small, bert_base"),
    ("[models.deepspeech2]\nrnn = 'rnn'", "model deepspeech2 option 'rnn' = 'rnn': allowed: lstm, gru"),
    (
        "[models.resnet18]\nblocks = [0, 1, 1, 1]",
        "model resnet18 option 'blocks' = [0, 1, 1, 1]: must be a list of 4 integers in [1, 1024], like its default",
    ),
    ("[models.resnet18]\nblocks = [1, 1]", "model resnet18 option 'blocks' = [1, 1]: must be a list of 4 integers"),
    (
        "[models.vgg16]\nwidths = [8, 8, 8, 8, -8]",
        "model vgg16 option 'widths' = [8, 8, 8, 8, -8]: must be a list of 5",
    ),
    (
        "[models.mobilenet_v2]\nwidth_mult = 0",
        "model mobilenet_v2 option 'width_mult' = 0: must be a finite number in (0, 16]",
    ),
    (
        "[models.efficientnet_b0]\nstochastic_depth = inf",
        "option 'stochastic_depth' = inf: must be a finite number in [0, 1)",
    ),
    (
        "[models.inception_v3]\nblocks_a = 4",
        "model inception_v3 option 'blocks_a' = 4: must be an integer in [1, 3] (Inception v3 has 3 A blocks)",
    ),
    ("[models.alexnet]\nhidden = true", "model alexnet option 'hidden' = True: must be an integer in [1, 1048576]"),
    # TOML beyond what Python reads
    ("v = " + "[" * 5000, "fuzz.toml: not valid TOML here: arrays or inline tables nested too deeply"),
    ("[protocol]\nseed = " + "9" * 5000, "fuzz.toml: not valid TOML here: Exceeds the limit (4300 digits)"),
    ("[matrix]\nmodel." + "a." * 2000 + "b = 1", "model = <dict nested too deeply to show>: unknown model"),
]


@pytest.mark.parametrize("text,needle", BAD_FILES, ids=[f"file{i}" for i in range(len(BAD_FILES))])
def test_bad_experiment_file(text, needle):
    with pytest.raises(ConfigError) as err:
        config.parse(text, "fuzz.toml")
    check_refusal(err.value, "fuzz.toml")
    assert needle in str(err.value)
    tally("known-bad experiment file", accepted=False)


def test_accepted_edges_of_every_bound():
    """The bounds are inclusive where they say ']': the largest allowed values parse."""
    exp = config.parse(
        f"""
[matrix]
framework = ["numpy"]
model = ["mlp"]
batch_size = [1, 1048576]
lr = [100, 5e-324]
input_shape = [0, 16384]
[protocol]
timeout = 604800
idle_baseline = 3600
sample_interval = 60
budget = 43200
tta_budget = 604800
repeats = 10000
warmup = 1000
trials = 1000
max_repeats = 1000
latency_batches = 100000
epochs = 100000
seed = 2147472647
train_samples = 2147483647
test_samples = 2147483647
threads = {CORES}
memory_limit = "256TiB"
[models.resnet18]
blocks = [1, 2, 3, 1024]
width = 1048576
""",
        "edges.toml",
    )
    assert exp.protocol.seed + exp.protocol.warmup + exp.protocol.repeats - 1 == 2**31 - 2  # the last repeat's seed
    assert exp.model_options["resnet18"]["blocks"] == (1, 2, 3, 1024)  # a TOML list becomes the tuple a spec uses
    assert config.parse_memory_limit(exp.protocol.memory_limit) == (2**48, False)


# (flags, needle): `dlbench plan` (or run, when a run-only flag is given) exits 2 with one error line.
BAD_FLAGS = [
    (["--batch-size", "abc"], "--batch-size 'abc': 'abc' is not an integer; expected comma-separated integers"),
    (["--batch-size", "1.5"], "--batch-size '1.5': '1.5' is not an integer"),
    (["--batch-size", "0"], "(--batch-size): batch_size = 0: batch_size must be a positive integer, at most 1048576"),
    (["--batch-size", "99999999999999999999"], "batch_size = 99999999999999999999: batch_size must be a positive"),
    (["--batch-size", ",,,"], "(--batch-size): batch_size is empty; give at least one value"),
    (["--lr", ""], "(--lr): lr is empty; give at least one value"),
    (["--lr", "nan"], "(--lr): lr = nan: lr must be a positive number, finite and at most 100: in (0, 100]"),
    (["--lr", "1e999"], "(--lr): lr = inf: lr must be a positive number, finite and at most 100"),
    (["--lr", "-0.1"], "(--lr): lr = -0.1: lr must be a positive number"),
    (["--lr", "0.1,x"], "--lr '0.1,x': 'x' is not a number; expected comma-separated numbers"),
    (["--input-shape", "-3"], "(--input-shape): input_shape = -3: input_shape must be a positive integer, at most"),
    (["--input-shape", "16385"], "(--input-shape): input_shape = 16385"),
    (["--framework", ",,,"], "(--framework): framework is empty; give at least one value"),
    (["--framework", "pytorch"], "(--framework): framework = 'pytorch': unknown framework; allowed: torch"),
    (["--model", "resnet"], "(--model): model = 'resnet': unknown model; allowed: mlp"),
    (["--dataset", "cifar"], "(--dataset): dataset = 'cifar': unknown dataset; allowed: digits"),
    (["--init", "he"], "(--init): init = 'he': unknown init; allowed:"),
    (["--optimizer", ""], "(--optimizer): optimizer is empty"),
    (["--precision", "fp8"], "(--precision): precision = 'fp8': unknown precision; allowed: float32, tf32, bf16-mixed"),
    (["--layout", "nchw"], "(--layout): layout = 'nchw': unknown layout"),
    (["--pipeline", "dali"], "(--pipeline): pipeline = 'dali': unknown pipeline; allowed: preloaded"),
    (["--option", "="], "--option '=': expected MODEL.OPTION=VALUE, e.g. lstm.hidden=650"),
    (["--option", "lstm.hidden"], "--option 'lstm.hidden': expected MODEL.OPTION=VALUE"),
    (
        ["--option", "lstm.hidden=-5"],
        "--option [models.lstm]: model lstm option 'hidden' = -5: must be an integer in [1, 1048576]",
    ),
    (["--option", "lstm.hidden="], "--option [models.lstm]: model lstm option 'hidden' = '': must be an integer"),
    (["--option", "lstm.dropout=nan"], "model lstm option 'dropout' = nan: must be a finite number in [0, 1)"),
    (["--option", "lstm.dropout=1e999"], "model lstm option 'dropout' = inf: must be a finite number in [0, 1)"),
    (
        ["--option", "transformer.hidden=30"],
        "--option [models.transformer]: transformer hidden (30) must be divisible by heads (4)",
    ),
    (
        ["--option", "transformer.heads=3", "--option", "transformer.hidden=32"],
        "transformer hidden (32) must be divisible by heads (3)",
    ),
    (["--option", "mlp.hidden=3"], "--option [models.mlp]: model mlp has no option 'hidden' (options: none)"),
    (["--option", "gpt.x=1"], "--option [models.gpt]: unknown model 'gpt'; allowed: mlp"),
    (["--epochs", "abc"], "Invalid value for '--epochs'"),
    (["--epochs", "0"], "(--epochs): epochs = 0: must be >= 1 and <= 100000"),
    (["--epochs", "99999999999999999999"], "(--epochs): epochs = 99999999999999999999: must be >= 1 and <= 100000"),
    (["--epochs", "2", "--steps", "3"], "command line: give --epochs or --steps, not both"),
    (["--steps", "-1"], "(--steps): steps = -1: must be >= 1 and <= 100000000"),
    (["--repeats", "0"], "(--repeats): repeats = 0: must be >= 1 and <= 10000"),
    (["--warmup", "-1"], "(--warmup): warmup = -1: must be >= 0 and <= 1000"),
    (["--trials", "1001"], "(--trials): trials = 1001: must be >= 1 and <= 1000"),
    (
        ["--threads", "999"],
        f"(--threads): threads = 999: must be 0 (one per physical core) or 1..{CORES}, the cores available here",
    ),
    (["--threads", "-1"], "(--threads): threads = -1: must be 0 (one per physical core)"),
    # run-only flags
    (
        ["run", "--trials", "1", "--timeout", "1e12"],
        "(--timeout): timeout = 1000000000000.0: must be a finite number of seconds in (0, 604800] (at most 7 days)",
    ),
    (["run", "--trials", "1", "--timeout", "inf"], "(--timeout): timeout = inf: must be a finite number of seconds"),
    (["run", "--trials", "1", "--timeout", "nan"], "(--timeout): timeout = nan: must be a finite number of seconds"),
    (
        ["run", "--trials", "1", "--idle-baseline", "1e12"],
        "(--idle-baseline): idle_baseline = 1000000000000.0: must be in [0, 3600] seconds",
    ),
    (["run", "--trials", "1", "--seed", "-1"], "(--seed): seed = -1: must be an integer in [0, 2147472647]"),
    (
        ["run", "--trials", "1", "--seed", "99999999999999999999"],
        "(--seed): seed = 99999999999999999999: must be an integer in",
    ),
    (
        ["run", "--trials", "1", "--memory-limit", "-3"],
        "(--memory-limit): memory_limit = '-3': expected a size such as 512MiB",
    ),
    (
        ["run", "--trials", "1", "--memory-limit", "99999999999999999999TiB"],
        "(--memory-limit): memory_limit = '99999999999999999999TiB': above 281474976710656 bytes (256 TiB, 2**48)",
    ),
    (
        ["run", "--trials", "1", "--samplers", "bogus"],
        "(--samplers): samplers = 'bogus': unknown sampler(s) bogus; allowed:",
    ),
    (
        ["run", "--trials", "1", "--until-ci-metrics", "x"],
        "(--until-ci-metrics): until_ci_metrics = 'x': 'x' is not a timed phase.metric",
    ),
    (["run", "--trials", "1", "--until-ci", "nan"], "(--until-ci): until_ci = nan: must be a percentage in (0, 100)"),
    (["run", "--trials", "1", "--budget", "inf"], "(--budget): budget = inf: must be in [0, 43200] minutes"),
    (["run", "--trials", "1", "--momentum", "nan"], "(--momentum): momentum = nan: must be in [0, 1)"),
    (
        ["run", "--trials", "1", "--sample-interval", "0.001"],
        "(--sample-interval): sample_interval = 0.001: must be 0 (source defaults) or in [0.01, 60] s",
    ),
    (
        ["run", "--trials", "1", "--train-samples", "2147483648"],
        "(--train-samples): train_samples = 2147483648: must be >= 0 and <= 2147483647 (0 = all)",
    ),
    (
        ["run", "--trials", "1", "--latency-batches", "-1"],
        "(--latency-batches): latency_batches = -1: must be >= 0 and <= 100000",
    ),
    (["run", "--trials", "1", "--max-repeats", "0"], "(--max-repeats): max_repeats = 0: must be >= 1 and <= 1000"),
    (
        ["run", "--trials", "1", "--target-accuracy", "nan"],
        "(--target-accuracy): target_accuracy = nan: must be a fraction in (0, 1]",
    ),
    (
        ["run", "--trials", "1", "--tta-budget", "-1"],
        "(--tta-budget): tta_budget = -1.0: must be in [0, 604800] seconds",
    ),
    (
        ["run", "--trials", "1", "--infer-min-time", "61"],
        "(--infer-min-time): infer_min_time = 61.0: must be in [0, 60] seconds",
    ),
    (["run", "--trials", "1", "--device", "tpu"], "(--device): device = 'tpu': allowed: cpu, cuda"),
    (["run", "--trials", "1", "--data-dir", "a\x00b"], "(--data-dir): data_dir = 'a\\x00b': expected a directory path"),
    (["report", "--format", "nope"], "--format 'nope': allowed: console"),
    (["report", "--run", "-1"], "no run -1"),
    (["compare", "1", "1", "--threshold", "nan"], "--band nan and --alpha 0.05 must lie strictly between 0 and 1"),
    (["compare", "1", "1", "--quantile", "nan"], "--quantile nan must lie strictly between 0 and 1"),
    (["compare", "1", "1", "--alpha", "inf"], "--band 0.02 and --alpha inf must lie strictly between 0 and 1"),
    (["extend", "1", "--blocks", "-1"], "--blocks -1: must be at least 1"),
]


@pytest.fixture
def empty_db(tmp_path) -> Path:
    db = tmp_path / "known-bad.db"
    Store(db).close()
    return db


def _args(flags: list[str], db: Path) -> list[str]:
    if flags[0] in ("run", "report", "compare", "extend"):
        return [*flags, "--db", str(db)]
    return ["plan", "--framework", "numpy", *flags] if "--framework" not in flags else ["plan", *flags]


@pytest.mark.parametrize("flags,needle", BAD_FLAGS, ids=[f"flags{i}" for i in range(len(BAD_FLAGS))])
def test_bad_flag(flags, needle, empty_db):
    before = empty_db.read_bytes()
    result = cli.invoke(app, _args(flags, empty_db))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None)
    joined = " ".join(result.output.split())  # rich wraps at the console width
    assert " ".join(needle.split()) in joined, result.output
    assert result.output.count("error:") <= 1
    assert empty_db.read_bytes() == before  # nothing stored
    tally("known-bad command line", accepted=False)


def test_experiment_file_problems_are_one_line(tmp_path):
    cases = {}
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"[matrix]\n\xff\xfe\x00model = 1")
    cases[binary] = f"{binary}: not UTF-8 text (byte 0xff at offset 9); an experiment file is TOML, which is UTF-8"
    nul = tmp_path / "nul.toml"
    nul.write_bytes(b"[matrix]\x00")
    cases[nul] = f"{nul}: not valid TOML"
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    cases[folder] = f"{folder}: is a directory; give an experiment file (TOML)"
    cases[tmp_path / "missing.toml"] = f"{tmp_path / 'missing.toml'}: no such experiment file"
    for path, needle in cases.items():
        result = cli.invoke(app, ["plan", str(path)])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert needle in " ".join(result.output.split()), result.output
        tally("known-bad experiment file", accepted=False)


def test_unreadable_experiment_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.toml"
    path.write_text("[protocol]\nrepeats = 2\n")
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads any file: make open() refuse as it would for anyone else
        import builtins

        real_open = builtins.open

        def refusing_open(file, *args, **kwargs):
            if str(file) == str(path):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", refusing_open)
    result = cli.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}: cannot read the experiment file: permission denied" in " ".join(result.output.split())
    tally("known-bad experiment file", accepted=False)


def test_huge_experiment_file_is_refused_unread(tmp_path):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as fh:
        fh.truncate(config.MAX_FILE_BYTES + 1)  # sparse: no disk space used
    with pytest.raises(ConfigError, match="larger than 16 MiB; an experiment file is TOML text"):
        config.load(path)


@pytest.mark.parametrize(
    "where,needle",
    [
        ("DIR", "is a directory; give the CSV file to write, e.g."),
        ("missing/dir/x.csv", "no directory"),
    ],
)
def test_export_to_a_bad_path_is_one_line_and_touches_nothing(tmp_path, where, needle):
    db = tmp_path / "runs.db"
    (tmp_path / "DIR").mkdir()
    from dlbench import runner
    from dlbench.plan import expand

    with Store(db) as store:
        runner.create_run(
            store,
            expand(config.parse("[matrix]\nframework = ['numpy']\nmodel = ['mlp']", "e.toml")),
            command="test",
            environment={},
        )
    before = db.read_bytes()
    out = tmp_path / where
    result = cli.invoke(app, ["export", str(out), "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.count("error:") == 1
    assert f"export {out}" in result.output.replace("\n", "") and needle in " ".join(result.output.split())
    assert db.read_bytes() == before
    assert not (tmp_path / "missing").exists()
    # And the export that works still works.
    good = cli.invoke(app, ["export", str(tmp_path / "runs.csv"), "--db", str(db)])
    assert good.exit_code == 0 and (tmp_path / "runs.csv").read_text().startswith("run_id,")


def test_export_refuses_an_impossible_run_id_or_a_missing_database_and_creates_none(tmp_path):
    db = tmp_path / "never.db"
    result = cli.invoke(app, ["export", str(tmp_path / "x.csv"), "--run", "99999999999999999999", "--db", str(db)])
    assert result.exit_code == 2 and "--run 99999999999999999999: a run id is a positive integer" in result.output
    result = cli.invoke(app, ["export", str(tmp_path / "x.csv"), "--db", str(db)])
    assert result.exit_code == 2 and f"--db {db}: no such database file" in " ".join(result.output.split())
    assert not db.exists() and not (tmp_path / "x.csv").exists()
