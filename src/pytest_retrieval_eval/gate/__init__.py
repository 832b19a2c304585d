"""When a run fails: threshold and max-drop rules, the baseline comparison, the verdict."""
