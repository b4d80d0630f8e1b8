"""What the machine offers the GPU campaign: Python, framework distributions, the devices each sees.

Reads installed versions from package metadata (importing TensorFlow only to list its
GPUs where it is installed), and asks torch and JAX which accelerators they see.

    python benchmarks/gpu_probe.py
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import sys

DISTRIBUTIONS = (
    "torch",
    "jax",
    "jaxlib",
    "jax-cuda13-plugin",
    "jax-cuda12-plugin",
    "flax",
    "optax",
    "tensorflow",
    "tensorflow-cpu",
    "nvidia-ml-py",
    "numpy",
    "scipy",
)


def main() -> int:
    print(f"python {sys.version.split()[0]} at {sys.executable}")
    for name in DISTRIBUTIONS:
        try:
            print(f"  {name} {md.version(name)}")
        except md.PackageNotFoundError:
            print(f"  {name}: not installed")
    if importlib.util.find_spec("torch"):
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            print(
                f"torch sees {torch.cuda.get_device_name(0)}: {props.multi_processor_count} SMs, "
                f"{props.total_memory / 2**30:.1f} GiB, CUDA {torch.version.cuda}, "
                f"cuDNN {torch.backends.cudnn.version()}"
            )
        else:
            print(f"torch sees no GPU (CUDA build: {torch.version.cuda})")
    if importlib.util.find_spec("jax"):
        import jax

        print(f"jax sees {jax.devices()}")
    if importlib.util.find_spec("tensorflow"):
        import tensorflow as tf

        print(f"tensorflow sees GPUs {tf.config.list_physical_devices('GPU')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
