"""Kafka's log files: segments and log directories (:mod:`kafkarec.log.segment`)
and the side files beside them (:mod:`kafkarec.log.sidefiles`).  The record
format itself is the core's (:mod:`kafkarec._core`); this layer frames files
and asks the core about every batch."""
