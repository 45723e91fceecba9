"""The order a job hands its units to Beam (``pipeline/runtime/unit_order.py``): Beam's local
runner really splits a step's elements among its workers by position, and ``spread_over``
places the units so that each worker's positions hold an even share of the text."""
import multiprocessing
import os
import uuid

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.pipeline.batches import Unit
from corpustok.pipeline.runtime.runners import beam_options, positional_split
from corpustok.pipeline.runtime.unit_order import largest_first, spread_over

# The 16 row groups of the GB benchmark's corpus (bench/corpus_build.py: corpus-b and
# /tmp/corpus-gb), MB of text each: largest first split by position gave two workers 520.3
# and 485.0 MB.
GB_ROW_GROUPS = [75.5, 75.2, 71.3, 68.9, 68.2, 67.6, 67.2, 66.5, 61.6, 60.9, 60.6, 59.2, 59.1,
                 58.8, 56.8, 27.9]

class _Record(beam.DoFn):
    """Appends each element to a file of its bundle, in the order the bundle runs them (a
    file: worker processes share no memory with the test)."""

    def __init__(self, folder):
        self._folder = folder

    def start_bundle(self):
        self._path = os.path.join(self._folder, uuid.uuid4().hex)

    def process(self, element):
        with open(self._path, "a") as f:
            f.write(f"{element}\n")


@pytest.mark.parametrize("mode,workers", [("multi_threading", 2), ("multi_threading", 3),
                                          ("multi_processing", 2)])
def test_beams_local_runner_splits_elements_by_position(mode, workers, tmp_path):
    """What ``spread_over`` relies on: with ``direct_num_workers`` n, the FnApiRunner runs
    element ``i`` of a ``Create`` in the bundle of worker ``i % n``, one bundle a worker, in
    the ``Create``'s order."""
    options = PipelineOptions([f"--direct_running_mode={mode}",
                               f"--direct_num_workers={workers}"])
    assert positional_split(options, FnApiRunner()) == workers
    elements = [(k * 7919) % 40 for k in range(40)]  # not sorted: the order is the point
    with beam.Pipeline(runner=FnApiRunner(), options=options) as p:
        p | beam.Create(elements) | beam.ParDo(_Record(str(tmp_path)))
    bundles = [[int(x) for x in f.read_text().split()] for f in tmp_path.iterdir()]
    assert sorted(bundles) == sorted(elements[k::workers] for k in range(workers))


def test_positional_split_of_the_job_runners():
    options, runner = beam_options((), workers=2)
    assert positional_split(options, runner) == 2
    options, runner = beam_options((), workers=None)
    assert positional_split(options, runner) == 1
    every_core = PipelineOptions(["--direct_num_workers=0"])  # Beam: the machine's CPU count
    assert positional_split(every_core, runner) == multiprocessing.cpu_count()
    assert positional_split(options, None) is None  # a runner Beam builds from --runner


def _parquet(sizes):
    return [Unit(f"f{k // 3}.parquet", "parquet", row_group=k % 3, text_bytes=s)
            for k, s in enumerate(sizes)]


def _shares(order, n):
    return [order[k::n] for k in range(n)]


def _load(share):
    return sum(u.text_bytes for u in share)


def _check(units, n):
    """``spread_over``'s order: the same units, whole files first as ``largest_first`` puts
    them, each worker's units largest first (ties in input order), and no worker's share
    larger than in the plain split of the largest-first order. Returns the shares' loads."""
    got = spread_over(units, n)
    plain = largest_first(units)
    assert sorted(map(id, got)) == sorted(map(id, units))
    whole = [u for u in plain if u.kind != "parquet"]
    assert got[:len(whole)] == whole
    for share in _shares(got, n):
        groups = [u for u in share if u.kind == "parquet"]
        assert groups == sorted(groups, key=lambda u: (-u.text_bytes, units.index(u)))
    assert max(map(_load, _shares(got, n))) <= max(map(_load, _shares(plain, n)))
    return [_load(s) for s in _shares(got, n)]


def test_the_gb_corpus_row_groups_are_shared_evenly():
    units = _parquet([round(mb * 1e6) for mb in GB_ROW_GROUPS])
    plain = [_load(s) for s in _shares(largest_first(units), 2)]
    assert plain == [520_300_000, 485_000_000]
    loads = _check(units, 2)
    assert max(loads) - min(loads) <= 1_000_000  # the best split is 0.1 MB apart
    loads = _check(units, 3)
    assert max(loads) - min(loads) <= 10_000_000


def test_whole_files_keep_their_places_and_one_worker_keeps_largest_first():
    units = _parquet([5, 9, 1, 7, 7, 3]) + [Unit("a.jsonl", "jsonl"), Unit("b.txt", "txt")]
    assert spread_over(units, None) == largest_first(units)
    assert spread_over(units, 1) == largest_first(units)
    _check(units, 2)
    _check(units, 3)
    assert spread_over([], 2) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=40), st.integers(0, 3), st.integers(2, 5))
def test_spread_over_keeps_every_unit_and_never_does_worse(sizes, whole, n):
    units = _parquet(sizes) + [Unit(f"w{k}.jsonl", "jsonl") for k in range(whole)]
    _check(units, n)
