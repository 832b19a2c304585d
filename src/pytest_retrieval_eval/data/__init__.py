"""What is evaluated: the corpus, labeled sets and their cache, staleness, chunking, corpus lint, question generation."""
