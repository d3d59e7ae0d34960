"""What kafkarec needs before its compiled core can load: ``loader`` (the core, also out of a zip),
``wheels`` (which wheels a Python needs, by the ``packaging`` library's rules) and ``files`` (files
written whole, the per-user cache).  Importable without the core: nothing here imports the rest of
kafkarec."""
