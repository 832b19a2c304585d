"""A pytest plugin for the benchmark (``-p bench_probe``): reports at exit whether the run
imported torch or the sentence-transformers model code."""

import json
import sys


def pytest_unconfigure(config):
    print("PROBE " + json.dumps({"torch": "torch" in sys.modules,
                                 "sentence_transformers": "sentence_transformers" in sys.modules}))
