"""The defaults of ``similar``'s options, apart from ``similar.py`` so that the command line (``cli.py``) reads them
without importing what the analysis imports (copydetect, numpy: most of a second of every command's start)."""

# the page's default: above what independent answers reached in the course's cells (test_similar)
THRESHOLD = 0.8
COMMON = 2  # answers written apart that may hold a passage before it is common knowledge (MOSS's -m)
