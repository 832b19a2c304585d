"""What a run leaves behind and reads back: results.json, the history of runs, baselines."""
