"""`efficientnet_b0`: torchvision's EfficientNet-B0, framework-neutral spec.

The shared EfficientNet description (layers, batch-norm settings, the comparison with
keras.applications) is in `dlbench.models._efficientnet`; B0 is its compound scaling
width 1.0, depth 1.0, dropout 0.2 (paper resolution 224),
5,288,548 / 19,341,616 trainable parameters for B0 / B4 at 1000 classes (any resolution).
"""

from dlbench.models._efficientnet import make_spec

SPEC = make_spec("efficientnet_b0", width_mult=1.0, depth_mult=1.0, dropout=0.2, resolution=224, reference=5_288_548)
