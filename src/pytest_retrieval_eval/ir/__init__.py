"""The pure IR core: measures, metrics (trec_eval semantics), qrels and runs with their file formats, statistics. No pytest, no I/O beyond file formats."""
