"""Training-time image augmentation pipelines (CIFAR-10 style), one per framework idiom.

Every pipeline does the same work: per-epoch shuffle, random 32x32 crop of the
image zero-padded by 4 pixels (black, i.e. before normalization, as
torchvision's ``RandomCrop(32, padding=4)`` on raw images), random horizontal
flip with probability 1/2, per-channel normalization ``(x - mean) / std`` with
statistics of the training split, and batching with the partial last batch
dropped. Test data only gets ``normalize``.

The random draws are made once per epoch on the host by
``params.epoch_params(seed, epoch, n)`` (numpy ``default_rng([seed, epoch])``),
so the same seed yields the same order, crops and flips in every pipeline; each
implementation only *applies* them, with its own framework's ops:

- ``numpy``: vectorized gathers with fancy indexing (the reference);
- ``torch``: tensor ops on the data's device (``F.pad``, ``unfold`` + advanced
  indexing, ``torch.where``/``flip``), NCHW like the torch adapter;
- ``tensorflow``: a ``tf.data`` pipeline (``from_tensor_slices`` -> ``map`` ->
  ``batch`` -> ``prefetch(AUTOTUNE)``);
- ``jax``: a jitted batch function, ``jax.vmap`` of ``lax.dynamic_slice``.

Each module has an ``Augmenter(mean, std, pad=4)`` with the same methods:
``prepare(x, y)`` (numpy NHWC -> the framework's preloaded tensors),
``epoch_batches(x, y, params, batch_size)`` (iterable of ``(xb, yb)``),
``normalize(x)`` and ``settings()`` (a dict for the fairness manifest). Modules
are imported by name (``importlib``) so that importing this package pulls in no
framework.
"""

from __future__ import annotations

PIPELINES = ("numpy", "torch", "tensorflow", "jax")
