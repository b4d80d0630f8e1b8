"""Cases as the store keeps them (case_json), for tests that write trials straight into a
Store: the settings a plain CPU run records, with the framework, variant, model and
dataset a test names."""

from __future__ import annotations


def stored_case(framework: str, variant: str, model: str = "mlp", dataset: str = "digits") -> dict:
    return {
        "framework": framework,
        "variant": variant,
        "model": model,
        "dataset": dataset,
        "batch_size": 32,
        "init": "glorot-uniform",
        "optimizer": "adam",
        "lr": 0.001,
        "epochs": 1,
        "steps": None,
        "threads": 2,
        "device": "cpu",
        "runtime": "defaults",
    }
