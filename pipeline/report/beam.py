"""The report's counting job on Beam: JSONL files -> batches of records -> per
``(tokenizer, lang, unit)`` token and base-symbol counts and per-language characters, each
combined per key (``beam_counts``; ``job.beam_report`` turns them into the report). Its own
module so that the report imports Beam only when it runs on Beam (``--beam``)."""
import functools
import json
import os
import tempfile
from collections import Counter

import apache_beam as beam

from corpustok.pipeline.encode import load_tokenizer
from corpustok.pipeline.report.metrics import (BATCH_RECORDS, Counts, Fields, add_counts,
                                               batch_counts, keep_units, lang_chars, read_records)
from corpustok.pipeline.runtime.runners import beam_options


def _record_batches(path, batch_size, flds=Fields(), units=None):
    """Lists of ``batch_size`` records of one file, only those of ``units`` (None: all)."""
    batch = []
    for rec in keep_units(read_records(path), flds, units):
        batch.append(rec)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _merge_counters(counters):
    out = Counter()
    for c in counters:
        out.update(c)
    return out


def _sum_counts(values):
    return functools.reduce(add_counts, values)


class CountBatch(beam.DoFn):
    """Builds the tokenizers from plain specs (paths or picklable factories) once per
    worker in ``setup``; ``process`` counts one batch of records."""

    def __init__(self, specs, flds):
        self._specs = specs
        self._flds = flds
        self._toks = None

    def setup(self):
        self._toks = {name: load_tokenizer(spec) for name, spec in self._specs.items()}

    def process(self, batch):
        yield from batch_counts(self._toks, batch, self._flds)

class CountUnitTokens(beam.PTransform):
    """Batches of records (lists of dicts) -> ``(counts, chars)`` PCollections:
    ``((name, lang, unit), (tokens, floor))`` and ``(lang, Counter of characters)``, each
    combined per key."""

    def __init__(self, specs, flds=Fields()):
        super().__init__()
        self._specs = specs
        self._flds = flds

    def expand(self, batches):
        counts = (batches
                  | "Count" >> beam.ParDo(CountBatch(self._specs, self._flds))
                  | "SumCounts" >> beam.CombinePerKey(_sum_counts))
        chars = (batches
                 | "Chars" >> beam.FlatMap(lang_chars, self._flds)
                 | "SumChars" >> beam.CombinePerKey(_merge_counters))
        return counts, chars


def beam_counts(specs, paths, flds=Fields(), batch_size=BATCH_RECORDS, runner=None,
                options=None, units=None):
    """Run the counting job on ``paths`` (JSONL files); ``specs`` maps tokenizer names to
    files or zero-argument factories; ``units``: count only these aligned units (None: all).
    Returns ``(counts, chars)`` as the in-process ``count_units`` does. ``runner`` defaults to
    the FnApiRunner."""
    if runner is None and options is None:
        options, runner = beam_options()
    with tempfile.TemporaryDirectory(prefix="corpustok-report-") as tmp:
        counts_prefix = os.path.join(tmp, "counts")
        chars_prefix = os.path.join(tmp, "chars")
        with beam.Pipeline(runner=runner, options=options) as p:
            batches = (p
                       | "Files" >> beam.Create(sorted(os.fspath(x) for x in paths))
                       | "Read" >> beam.FlatMap(_record_batches, batch_size, flds,
                                               None if units is None else sorted(units)))
            counts, chars = batches | "CountUnitTokens" >> CountUnitTokens(specs, flds)
            (counts | "CountsJson" >> beam.Map(lambda kv: json.dumps([list(kv[0]), kv[1]]))
             | "WriteCounts" >> beam.io.WriteToText(counts_prefix))
            (chars | "CharsJson" >> beam.Map(lambda kv: json.dumps([kv[0], dict(kv[1])]))
             | "WriteChars" >> beam.io.WriteToText(chars_prefix))
        out_counts, out_chars = {}, {}
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                for line in f:
                    a, b = json.loads(line)
                    if name.startswith("counts"):
                        out_counts[tuple(a)] = Counts(*b)
                    else:
                        out_chars[a] = Counter(b)
    return out_counts, out_chars
