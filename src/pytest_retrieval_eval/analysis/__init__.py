"""What a run means: every quantity derived from the recorded run, computed once (``analyse``)."""
