"""Renderings of a session's results: terminal, Markdown and files, the Hit@k plot, the HTML page."""
