"""kafkarec's reader (:class:`kafkarec.scan.LogScan`) inside other engines; each adapter is a module of
its own, imported by name (``kafkarec.engines.ray``, ``kafkarec.engines.daft``), that needs its engine
(the ``engines`` extra)."""
