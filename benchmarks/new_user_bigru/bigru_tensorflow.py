"""`bigru` in tensorflow, as a new user writes it from docs/tutorial.md."""

import keras


def build(input_shape, num_classes, kernel_initializer=None, bias_initializer=None, hidden=16):
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Bidirectional(keras.layers.GRU(hidden, return_sequences=True, **init), name="gru")(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.ReLU()(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes, name="head", **init)(x))
