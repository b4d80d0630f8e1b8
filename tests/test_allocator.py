"""glibc's malloc thresholds: fixed by dlbench only where the case asks (runtime malloc-fixed)."""

from __future__ import annotations

from dlbench.allocator import MARK, MMAP_THRESHOLD, TRIM_THRESHOLD, worker_environment


def test_both_thresholds_are_set_at_glibcs_ceiling_when_fixed():
    env = worker_environment({"PATH": "/bin"}, fixed=True)
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 * 2**20) == str(MMAP_THRESHOLD)
    # Never the mmap threshold alone: glibc would keep a 128 KiB trim threshold (2.1x slower LeNet-5 steps).
    assert env["MALLOC_TRIM_THRESHOLD_"] == str(64 * 2**20) == str(TRIM_THRESHOLD)
    assert env[MARK] == "dlbench" and env["PATH"] == "/bin"


def test_fixed_replaces_a_users_thresholds_so_the_case_runs_what_it_records():
    env = worker_environment({"MALLOC_MMAP_THRESHOLD_": "131072"}, fixed=True)
    assert env["MALLOC_MMAP_THRESHOLD_"] == str(MMAP_THRESHOLD) and env[MARK] == "dlbench"


def test_by_default_nothing_is_added_and_a_users_threshold_is_kept_unclaimed():
    assert worker_environment({"PATH": "/bin"}, fixed=False) == {"PATH": "/bin"}
    env = worker_environment({"MALLOC_MMAP_THRESHOLD_": "131072"}, fixed=False)
    assert env == {"MALLOC_MMAP_THRESHOLD_": "131072"}


def test_thresholds_a_parent_dlbench_set_do_not_leak_into_a_default_worker():
    parent = worker_environment({"PATH": "/bin"}, fixed=True)
    assert worker_environment(parent, fixed=False) == {"PATH": "/bin"}
