"""`efficientnet_b4`: torchvision's EfficientNet-B4, framework-neutral spec.

The shared EfficientNet description (layers, batch-norm settings, the comparison with
keras.applications) is in `dlbench.models._efficientnet`; B4 is its compound scaling
width 1.4, depth 1.8, dropout 0.4 (paper resolution 380),
5,288,548 / 19,341,616 trainable parameters for B0 / B4 at 1000 classes (any resolution).
"""

from dlbench.models._efficientnet import make_spec

SPEC = make_spec("efficientnet_b4", width_mult=1.4, depth_mult=1.8, dropout=0.4, resolution=380, reference=19_341_616)
