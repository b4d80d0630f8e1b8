"""`resnet50`: torchvision's ResNet-50 (v1.5 bottlenecks 3-4-6-3).

The architecture, its padding and batch-norm settings are described once in
`dlbench.models._resnet`; this spec fixes the block kind (bottleneck) and the
default blocks per stage (3, 4, 6, 3). 25,557,032 trainable parameters at 224x224x3
with 1000 classes (torchvision). Options: `blocks` (per stage) and `width`
(planes of the first stage, doubled per stage); the conformance suite trains
blocks (1, 1, 1, 1) at width 8 on 28x28x1 and 16x16x3.

keras.applications.ResNet50 is ResNet v1 with a bias on every convolution: its
trainable count is ours plus `_resnet.conv_bias_count` (the number of
convolution output channels), asserted exactly by the zoo tests.
"""

from dlbench.models._resnet import make_spec

BLOCK = "bottleneck"
BLOCKS = (3, 4, 6, 3)

SPEC = make_spec(
    "resnet50", BLOCK, BLOCKS, reference=25_557_032, tiny_blocks=(1, 1, 1, 1), keras_application="ResNet50"
)
