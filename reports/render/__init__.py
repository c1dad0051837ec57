"""Rendering: markdown, HTML and plots from a judgement and the records."""
