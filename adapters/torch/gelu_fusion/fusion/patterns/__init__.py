"""The fusions, one file a pattern, each exporting PATTERN (a
pattern.Pattern); registry.py holds them in order."""
