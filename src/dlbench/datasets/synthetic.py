"""Synthetic data generated in memory, before any timing, for every input kind.

- image / classify: the dummy-data design of seed study 001: uniform [0, 1)
  float32 images of a chosen shape and uniformly random labels. It measures
  speed without file I/O and lets the image size vary freely; accuracy on it
  means nothing (labels are random), which is the point.
- tokens / next-token: sequences from a fixed random Markov chain (each token
  has one favoured successor, taken with probability 0.8, else a uniform
  draw): x = s[:T], y = s[1:T+1]. Learnable: the best possible next-token
  accuracy is about 0.8 + 0.2 / vocab, chance is 1 / vocab.
- tokens / classify: position 0 holds id 0 (a [CLS]-like marker for
  first-token pooling); every other position is, with probability 0.3, one of
  the class's own keyword ids, else a uniform id in 1..vocab-1.
- spectrogram / ctc: each label sequence (ids 1..classes-1, length between
  L/2 and L = T // 8, padded with -1) is laid out over the T frames, one equal
  slot per symbol: the middle 60% of a slot holds the symbol's fixed random
  feature vector, the rest silence (zeros), all plus Gaussian noise (sd 0.5).

Everything comes from ``np.random.default_rng(seed)``, so a trial's data is
reproducible from its seed; the Markov chain, keywords and feature prototypes
are part of that draw (train and test share them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit

NAME = "synthetic"
# input kind -> (tasks it supports, number of shape dimensions, what they are).
KINDS = {
    "image": (("classify",), 3, "(H, W, C)"),
    "tokens": (("classify", "next-token"), 1, "(T,)"),
    "spectrogram": (("ctc",), 2, "(T, F)"),
}
DEFAULT_VOCAB = 1000  # tokens / classify when no vocabulary is given
MARKOV_FOLLOW = 0.8  # probability of a token's favoured successor
KEYWORD_RATE = 0.3  # share of positions holding a class keyword
FRAMES_PER_SYMBOL = 8  # CTC: at most T // 8 symbols per utterance
NOISE = 0.5


def _positive_int(value: object) -> bool:
    return bool(isinstance(value, int | np.integer) and not isinstance(value, bool) and value > 0)


@dataclass(frozen=True)
class SyntheticOptions:
    """Shape of one sample, class count, split sizes, input kind, task and vocabulary.

    ``shape`` is (H, W, C) for images, (T,) for tokens, (T, F) for spectrograms.
    ``classes`` is the class count (classify), the vocabulary (next-token, where
    ``vocab`` must be None or equal) or the alphabet size including the blank
    (ctc). ``vocab`` is the token-id range of tokens / classify inputs.
    """

    shape: tuple[int, ...] = (28, 28, 1)
    classes: int = 10
    train_size: int = 6000
    test_size: int = 1000
    input_kind: str = "image"
    task: str = "classify"
    vocab: int | None = None

    def __post_init__(self) -> None:
        if self.input_kind not in KINDS:
            raise ValueError(f"synthetic input_kind must be one of {', '.join(KINDS)}, got {self.input_kind!r}")
        tasks, ndim, what = KINDS[self.input_kind]
        if self.task not in tasks:
            raise ValueError(f"synthetic {self.input_kind} data supports task {' or '.join(tasks)}, got {self.task!r}")
        shape = tuple(self.shape) if isinstance(self.shape, list | tuple) else self.shape
        if not (isinstance(shape, tuple) and len(shape) == ndim and all(map(_positive_int, shape))):
            count = {1: "one positive integer", 2: "two positive integers", 3: "three positive integers"}[ndim]
            raise ValueError(f"synthetic shape must be {count} {what}, got {self.shape!r}")
        # A list from TOML becomes a tuple so that the options stay hashable.
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        if not isinstance(self.classes, int | np.integer) or isinstance(self.classes, bool) or self.classes < 2:
            raise ValueError(f"synthetic classes must be an integer >= 2, got {self.classes!r}")
        for field in ("train_size", "test_size"):
            value = getattr(self, field)
            if not _positive_int(value):
                raise ValueError(f"synthetic {field} must be a positive integer, got {value!r}")
        for field in ("classes", "train_size", "test_size"):  # numpy ints -> int
            object.__setattr__(self, field, int(getattr(self, field)))
        self._check_vocab()
        if self.task == "ctc" and self.shape[0] < FRAMES_PER_SYMBOL:
            raise ValueError(
                f"synthetic ctc utterances need at least {FRAMES_PER_SYMBOL} frames "
                f"(one symbol per {FRAMES_PER_SYMBOL}), got T={self.shape[0]}"
            )

    def _check_vocab(self) -> None:
        vocab = self.vocab
        if vocab is not None and not (_positive_int(vocab) and vocab >= 2):
            raise ValueError(f"synthetic vocab must be an integer >= 2, got {vocab!r}")
        if self.input_kind != "tokens" and vocab is not None:
            raise ValueError(f"synthetic vocab applies to token inputs only, not {self.input_kind}")
        if self.task == "next-token" and vocab is not None and vocab != self.classes:
            raise ValueError(
                f"synthetic next-token data predicts its own tokens: vocab ({vocab}) "
                f"must equal classes ({self.classes})"
            )
        if self.input_kind == "tokens" and self.task == "classify":
            v = int(vocab) if vocab is not None else DEFAULT_VOCAB
            if v - 1 < self.classes:
                raise ValueError(
                    f"synthetic token classification needs vocab > classes "
                    f"(one keyword id per class besides id 0), got vocab {v}, "
                    f"classes {self.classes}"
                )
        if vocab is not None:
            object.__setattr__(self, "vocab", int(vocab))

    @property
    def token_vocab(self) -> int:
        """The token-id range of token inputs (ids 0..token_vocab-1)."""
        if self.task == "next-token":
            return self.classes
        return self.vocab if self.vocab is not None else DEFAULT_VOCAB


def _images(rng: np.random.Generator, opts: SyntheticOptions, n: int) -> ArraySplit:
    x = rng.random((n, *opts.shape), dtype=np.float32)
    y = rng.integers(0, opts.classes, size=n, dtype=np.int64)
    return ArraySplit(x, y)


def _markov(rng: np.random.Generator, successor: np.ndarray, n: int, t: int) -> ArraySplit:
    v = successor.shape[0]
    seq = np.empty((n, t + 1), dtype=np.int64)
    seq[:, 0] = rng.integers(0, v, n)
    follow = rng.random((n, t)) < MARKOV_FOLLOW
    uniform = rng.integers(0, v, (n, t))
    for i in range(t):  # T steps over all N sequences at once
        seq[:, i + 1] = np.where(follow[:, i], successor[seq[:, i]], uniform[:, i])
    return ArraySplit(seq[:, :t].astype(np.int32), np.ascontiguousarray(seq[:, 1:]))


def _keywords(rng: np.random.Generator, keywords: np.ndarray, vocab: int, n: int, t: int) -> ArraySplit:
    classes, per_class = keywords.shape
    y = rng.integers(0, classes, n, dtype=np.int64)
    x = rng.integers(1, vocab, (n, t))
    pick = keywords[y[:, None], rng.integers(0, per_class, (n, t))]
    x = np.where(rng.random((n, t)) < KEYWORD_RATE, pick, x)
    x[:, 0] = 0
    return ArraySplit(x.astype(np.int32), y)


def _utterances(rng: np.random.Generator, prototypes: np.ndarray, n: int, t: int) -> ArraySplit:
    alphabet, features = prototypes.shape
    most = max(1, t // FRAMES_PER_SYMBOL)
    lengths = rng.integers((most + 1) // 2, most + 1, n)
    labels = rng.integers(1, alphabet, (n, most))
    labels[np.arange(most)[None, :] >= lengths[:, None]] = -1
    # Frame f of an utterance with l symbols lies in slot floor(f * l / T).
    pos = np.arange(t)[None, :] * lengths[:, None] / t
    slot = np.floor(pos).astype(np.int64)
    frac = pos - slot
    symbol = np.take_along_axis(labels, slot, axis=1)
    symbol = np.where((frac >= 0.2) & (frac < 0.8), symbol, 0)
    x = prototypes[symbol] + NOISE * rng.standard_normal((n, t, features))
    return ArraySplit(x.astype(np.float32), labels.astype(np.int64))


def load(options: SyntheticOptions | None = None, seed: int = 0) -> Arrays:
    """Train and test splits for ``options`` (defaults when None), from ``seed``."""
    opts = options if options is not None else SyntheticOptions()
    rng = np.random.default_rng(seed)
    n_train, n_test = opts.train_size, opts.test_size
    if opts.input_kind == "image":
        train, test = _images(rng, opts, n_train), _images(rng, opts, n_test)
    elif opts.task == "next-token":
        successor = rng.permutation(opts.classes)
        (t,) = opts.shape
        train, test = _markov(rng, successor, n_train, t), _markov(rng, successor, n_test, t)
    elif opts.input_kind == "tokens":
        vocab = opts.token_vocab
        per_class = max(1, (vocab - 1) // (4 * opts.classes))
        keywords = (1 + rng.permutation(vocab - 1)[: opts.classes * per_class]).reshape(opts.classes, per_class)
        (t,) = opts.shape
        train = _keywords(rng, keywords, vocab, n_train, t)
        test = _keywords(rng, keywords, vocab, n_test, t)
    else:
        t, f = opts.shape
        prototypes = rng.standard_normal((opts.classes, f))
        prototypes[0] = 0.0  # the blank: silence
        train, test = _utterances(rng, prototypes, n_train, t), _utterances(rng, prototypes, n_test, t)
    return Arrays(NAME, train, test, opts.classes)
