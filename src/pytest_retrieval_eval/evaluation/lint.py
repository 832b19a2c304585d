"""Run lint: what an engine's answers themselves show, per engine, counted in queries.

- ``empty``: an answer with no document;
- ``duplicates``: an answer naming a document twice (the plugin keeps its first rank);
- ``unknown_ids``: an answer naming ids the corpus lacks;
- ``ties``: a scored answer whose documents at a table cutoff (1, 3, 5, 10, 20) and just past it
  share a score, so which of them counts in the top k is the tie-break's choice.

Gateable as ``[ENGINE:]run.<kind><=N`` (``--retrieval-threshold "run.empty<=0"``).
"""

from .._defaults import RUN_LINT_KINDS

KINDS = RUN_LINT_KINDS
TIE_CUTOFFS = (1, 3, 5, 10, 20)
