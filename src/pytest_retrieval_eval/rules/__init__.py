"""The rule grammar and the typed settings a run is judged by, parsed once, below the analysis
that reads them; checking a run against them is the gate's (``gate/checks.py``)."""
