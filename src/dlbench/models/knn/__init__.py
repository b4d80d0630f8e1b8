"""`knn`: scikit-learn's KNeighborsClassifier(n_neighbors=5), seed 000's baseline.

"Training" is `fit` (building the index), inference is `predict`. It has no
trainable parameters, epochs or batches; the batch size only sets the
chunk size of inference latency measurements.
"""

from dlbench.models.spec import ModelSpec

N_NEIGHBORS = 5

SPEC = ModelSpec(
    name="knn",
    description="k-nearest neighbours, k=5 (scikit-learn KNeighborsClassifier)",
    kind="classical",
    frameworks=("sklearn",),
)
