"""What the report's tests share: the field names of their records, and the Gini coefficient
by its definition (the mean absolute difference over all ordered pairs, over twice the mean),
the oracle of ``report.metrics.gini``'s sorted formula."""
from corpustok.pipeline.report.metrics import Fields

UNIT = Fields(unit="unit")


def gini_double_sum(x):
    n, mean = len(x), sum(x) / len(x)
    return sum(abs(a - b) for a in x for b in x) / (2 * n * n * mean)
