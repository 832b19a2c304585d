"""Renderings of a session's results: the terminal table (more formats come with reports)."""
