"""The built-in datasets as `DatasetSpec` objects (the registry names them lazily).

Each wraps its loader module: MNIST and Fashion-MNIST (IDX files), CIFAR-10
(binary batches), scikit-learn's digits (embedded, no files) and the seeded
synthetic data. Nothing is read when this module is imported.
"""

from __future__ import annotations

from dlbench.datasets import cifar10, digits, mnist, synthetic
from dlbench.datasets.spec import DatasetSpec

# name -> the attribute of this module that holds it (dlbench.registry resolves names here)
ATTRS = {
    "digits": "DIGITS",
    "mnist": "MNIST",
    "fashion-mnist": "FASHION_MNIST",
    "cifar10": "CIFAR10",
    "synthetic": "SYNTHETIC",
}


def _idx(name: str, description: str) -> DatasetSpec:
    # mnist.SPECS is read at each call, not here: its entries are the place to change
    # where a dataset is looked for (the tests empty the system directories there).
    return DatasetSpec(
        name=name,
        description=description,
        shape=lambda _s: (mnist.SHAPE, mnist.CLASSES),
        load=lambda data_dir, _s, _seed: mnist.load(mnist.SPECS[name], data_dir),
        locate=lambda data_dir: mnist.locate(mnist.SPECS[name], data_dir),
        ensure=lambda data_dir, download, progress: mnist.ensure(
            mnist.SPECS[name], data_dir, download=download, progress=progress
        ),
    )


MNIST = _idx(mnist.MNIST.name, "handwritten digits, 60,000 + 10,000 grey 28x28 images (IDX files)")
FASHION_MNIST = _idx(mnist.FASHION_MNIST.name, "Zalando's clothing images, 60,000 + 10,000 grey 28x28 (IDX files)")

CIFAR10 = DatasetSpec(
    name="cifar10",
    description="50,000 + 10,000 colour 32x32 images in 10 classes (binary batches)",
    shape=lambda _s: (cifar10.SHAPE, cifar10.CLASSES),
    load=lambda data_dir, _s, _seed: cifar10.load(cifar10.SPECS["cifar10"], data_dir),
    locate=lambda data_dir: cifar10.locate(cifar10.SPECS["cifar10"], data_dir),
    ensure=lambda data_dir, download, progress: cifar10.ensure(
        cifar10.SPECS["cifar10"], data_dir, download=download, progress=progress
    ),
)


def _ensure_digits(data_dir: str | None, download: bool, progress: object) -> None:
    digits.ensure()
    return None


DIGITS = DatasetSpec(
    name=digits.NAME,
    description="scikit-learn's embedded 8x8 digits, 1,797 images (a fixed 80/20 split)",
    shape=lambda _s: (digits.SHAPE, digits.CLASSES),
    load=lambda data_dir, _s, _seed: digits.load(),
    ensure=_ensure_digits,
)


def _synthetic_shape(options: synthetic.SyntheticOptions | None) -> tuple[tuple[int, ...], int]:
    opts = options if options is not None else synthetic.SyntheticOptions()
    return opts.shape, opts.classes


SYNTHETIC = DatasetSpec(
    name=synthetic.NAME,
    description="seeded random data of any shape ([synthetic] table; learnable classes)",
    shape=_synthetic_shape,
    load=lambda data_dir, options, seed: synthetic.load(options, seed),
    fixed_shape=False,
)
