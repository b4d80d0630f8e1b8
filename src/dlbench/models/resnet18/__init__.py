"""`resnet18`: torchvision's ResNet-18 (basic blocks 2-2-2-2).

The architecture, its padding and batch-norm settings are described once in
`dlbench.models._resnet`; this spec fixes the block kind (basic) and the
default blocks per stage (2, 2, 2, 2). 11,689,512 trainable parameters at 224x224x3
with 1000 classes (torchvision). Options: `blocks` (per stage) and `width`
(planes of the first stage, doubled per stage); the conformance suite trains
blocks (1, 1, 1, 1) at width 8 on 28x28x1 and 16x16x3.
"""

from dlbench.models._resnet import make_spec

BLOCK = "basic"
BLOCKS = (2, 2, 2, 2)

SPEC = make_spec("resnet18", BLOCK, BLOCKS, reference=11_689_512, tiny_blocks=(1, 1, 1, 1), keras_application=None)
