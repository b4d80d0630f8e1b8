"""Every worker starts with glibc's malloc thresholds fixed alike, unless the user set them."""

from __future__ import annotations

from dlbench.allocator import MARK, MMAP_THRESHOLD, TRIM_THRESHOLD, worker_environment


def test_both_thresholds_are_set_at_glibcs_ceiling():
    env = worker_environment({"PATH": "/bin"})
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 * 2**20) == str(MMAP_THRESHOLD)
    # Never the mmap threshold alone: glibc would keep a 128 KiB trim threshold (2.1x slower LeNet-5 steps).
    assert env["MALLOC_TRIM_THRESHOLD_"] == str(64 * 2**20) == str(TRIM_THRESHOLD)
    assert env[MARK] == "dlbench" and env["PATH"] == "/bin"


def test_a_users_threshold_is_kept_and_not_claimed():
    env = worker_environment({"MALLOC_TRIM_THRESHOLD_": "1000000", MARK: "dlbench"})
    assert env == {"MALLOC_TRIM_THRESHOLD_": "1000000"}
    env = worker_environment({"MALLOC_MMAP_THRESHOLD_": "131072"})
    assert env == {"MALLOC_MMAP_THRESHOLD_": "131072"}
